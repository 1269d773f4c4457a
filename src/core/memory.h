// Feature-map memory of one Extractor: counts what it takes from the system
// allocator and, in pool mode, keeps freed feature maps for reuse.
#pragma once
#include <cstddef>
#include <mutex>
#include <vector>

#include "kestrel/mat.h"

namespace kestrel {

// Pool mode is the paper's: the unit is a whole feature map; a freed map goes back to
// the pool and a request takes the smallest free block that fits, else allocates
// upstream. Without pooling every block goes straight back upstream when freed.
//
// Lifetime: Mats handed to users point at this object (Mat::allocator). The owning
// Extractor therefore never deletes it directly but calls orphan(): free blocks are
// returned at once and the object deletes itself when the last block in use comes
// back, so an output Mat may outlive its Extractor.
class ExtractorMemory final : public Allocator {
 public:
  ExtractorMemory(Allocator* upstream, bool pooling) : upstream_(upstream), pooling_(pooling) {}

  void* allocate(size_t size) override;
  void deallocate(void* ptr) override;

  // The next allocate() first tries `block` (a pointer this pool handed out before).
  // Smallest-fit alone is not stable between runs: blocks created late in the first
  // inference are free early in the second and smaller requests can take them, so a
  // later request misses. When every feature map asks for the block it had last time,
  // the second inference repeats the first one's assignment exactly (each block is
  // free at the same moments), so it makes no system allocation.
  void set_hint(void* block) { hint_ = block; }

  // Switches pooling; switching off returns the free blocks upstream.
  void set_pooling(bool on);
  // Returns every free block upstream.
  void trim();
  // Called instead of delete by the owner (see above).
  void orphan();

  struct Counters {
    size_t allocations = 0;  // upstream calls
    size_t held = 0;         // bytes held from upstream now
    size_t peak_held = 0;
    size_t hits = 0;         // requests served from the pool
  };
  Counters counters();
  void reset_counters();

 private:
  ~ExtractorMemory() override = default;
  void trim_locked();

  struct Block {
    void* ptr;
    size_t size;
    bool in_use;
  };
  Allocator* upstream_;
  bool pooling_;
  bool orphaned_ = false;
  void* hint_ = nullptr;
  std::mutex mutex_;
  std::vector<Block> blocks_;
  Counters counters_;
};

}  // namespace kestrel
