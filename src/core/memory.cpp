#include "core/memory.h"

#include <algorithm>
#include <new>

namespace kestrel {

void* ExtractorMemory::allocate(size_t size) {
  std::lock_guard<std::mutex> lock(mutex_);
  void* hint = hint_;
  hint_ = nullptr;
  if (pooling_) {
    Block* best = nullptr;
    for (Block& b : blocks_) {
      if (b.in_use || b.size < size) continue;
      if (b.ptr == hint) {
        best = &b;
        break;
      }
      if (!best || b.size < best->size) best = &b;
    }
    if (best) {
      best->in_use = true;
      ++counters_.hits;
      return best->ptr;
    }
  }
  // Reserve first so that a failing bookkeeping allocation cannot lose a block; an
  // Allocator reports failure with nullptr, never by throwing (mat.h).
  try {
    blocks_.reserve(blocks_.size() + 1);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
  void* p = upstream_->allocate(size);
  if (!p) return nullptr;
  blocks_.push_back({p, size, true});
  ++counters_.allocations;
  counters_.held += size;
  counters_.peak_held = std::max(counters_.peak_held, counters_.held);
  return p;
}

void ExtractorMemory::deallocate(void* ptr) {
  if (!ptr) return;
  bool destroy = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = std::find_if(blocks_.begin(), blocks_.end(), [&](const Block& b) { return b.ptr == ptr; });
    if (it == blocks_.end()) return;
    it->in_use = false;
    if (!pooling_ || orphaned_) {
      counters_.held -= it->size;
      upstream_->deallocate(it->ptr);
      *it = blocks_.back();
      blocks_.pop_back();
    }
    destroy = orphaned_ && blocks_.empty();
  }
  if (destroy) delete this;
}

void ExtractorMemory::set_pooling(bool on) {
  std::lock_guard<std::mutex> lock(mutex_);
  pooling_ = on;
  if (!on) trim_locked();
}

void ExtractorMemory::trim() {
  std::lock_guard<std::mutex> lock(mutex_);
  trim_locked();
}

void ExtractorMemory::trim_locked() {
  auto keep = std::remove_if(blocks_.begin(), blocks_.end(), [&](const Block& b) {
    if (b.in_use) return false;
    counters_.held -= b.size;
    upstream_->deallocate(b.ptr);
    return true;
  });
  blocks_.erase(keep, blocks_.end());
}

void ExtractorMemory::orphan() {
  bool destroy = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    orphaned_ = true;
    trim_locked();
    destroy = blocks_.empty();
  }
  if (destroy) delete this;
}

ExtractorMemory::Counters ExtractorMemory::counters() {
  std::lock_guard<std::mutex> lock(mutex_);
  return counters_;
}

void ExtractorMemory::reset_counters() {
  std::lock_guard<std::mutex> lock(mutex_);
  counters_.allocations = 0;
  counters_.hits = 0;
  counters_.peak_held = counters_.held;
}

}  // namespace kestrel
