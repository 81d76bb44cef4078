#include "cli/embedded_coordinator.h"

#include <utility>

namespace tunefleet::cli {

Result<std::unique_ptr<EmbeddedCoordinator>> EmbeddedCoordinator::Start(const std::string& data_dir,
                                                                        const SocCatalog& catalog,
                                                                        std::shared_ptr<const KtCache> replay) {
  auto e = std::unique_ptr<EmbeddedCoordinator>(new EmbeddedCoordinator());
  TF_ASSIGN_OR_RETURN(e->store_, coordinator::Store::Open(data_dir));
  e->options_.client_endpoint = "inproc://tunefleet-clients";
  e->options_.worker_endpoint = "inproc://tunefleet-workers";
  if (replay) e->options_.replay_caches.push_back(std::move(replay));
  TF_ASSIGN_OR_RETURN(e->coord_, coordinator::Coordinator::Create(e->options_, *e->store_, catalog, e->clock_,
                                                                   e->registry_, e->ctx_));
  e->thread_ = std::thread([raw = e.get()] { raw->run_status_ = raw->coord_->Run(); });
  return e;
}

EmbeddedCoordinator::~EmbeddedCoordinator() { (void)Stop(); }

Status EmbeddedCoordinator::Stop() {
  if (thread_.joinable()) {
    coord_->Stop();
    thread_.join();
  }
  return run_status_;
}

}  // namespace tunefleet::cli
