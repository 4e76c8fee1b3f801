#include "seam/work.h"

#include "runtime/comm/comm_internal.h"

namespace seam::comm {

void Work::wait() {
  if (completion_) return completion_->wait();
  if (!state_) return;
  state_->engine->drive(*state_);
  if (state_->status == WorkState::Status::failed) std::rethrow_exception(state_->error);
}

bool Work::test() {
  if (completion_) return completion_->test();
  if (!state_) return true;
  if (state_->status == WorkState::Status::pending) state_->engine->poll();
  if (state_->status == WorkState::Status::failed) std::rethrow_exception(state_->error);
  return state_->status == WorkState::Status::done;
}

bool Work::finished() const {
  if (completion_) return completion_->finished();
  return !state_ || state_->status != WorkState::Status::pending;
}

std::string Work::error() const {
  if (completion_) return completion_->error();
  return state_ ? state_->error_text : std::string();
}

}  // namespace seam::comm
