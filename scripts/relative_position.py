"""The relative position buckets of T5 and MPNet (Hugging Face's
T5Attention._relative_position_bucket, bidirectional, and MPNetEncoder.relative_position_bucket,
the same function written with n = -relative_position): half the buckets for keys after the
query, and within each half the distance exact up to num_buckets / 4, log-spaced up to
max_distance, the last bucket beyond. At a fixed sequence length the buckets are constants,
so an ONNX export computes them, and the bias gathered by them, at compile time."""
import math

import torch


def relative_position_bucket(relative_position, num_buckets=32, max_distance=128):
    num_buckets //= 2
    relative_buckets = (relative_position > 0).to(torch.long) * num_buckets
    relative_position = torch.abs(relative_position)
    max_exact = num_buckets // 2
    is_small = relative_position < max_exact
    if_large = max_exact + (
        torch.log(relative_position.float() / max_exact) / math.log(max_distance / max_exact) * (num_buckets - max_exact)
    ).to(torch.long)
    if_large = torch.min(if_large, torch.full_like(if_large, num_buckets - 1))
    return relative_buckets + torch.where(is_small, relative_position, if_large)
