// Kestrel public API: include this header to get Net, Extractor, Mat and Option.
//
// Errors: every call that can fail returns kestrel::Status; no exception escapes the
// API. After an error the Net and any Extractor stay usable: a failed load keeps the
// previously loaded model (if any), a failed extract leaves the Extractor ready for
// the next input/extract.
//
// Threads: a loaded Net is immutable and may be shared by any number of Extractors on
// any threads. One Extractor must be used by one thread at a time.
#pragma once
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kestrel/mat.h"
#include "kestrel/option.h"
#include "kestrel/status.h"

namespace kestrel {

struct NetImpl;
class ExtractorImpl;
class Extractor;
class CpuSet;  // kestrel/cpu.h

// Feature-map memory of one Extractor. "Held" bytes are those obtained from the
// system allocator and not yet returned (pool cache and plan arena included); "in
// use" bytes are live feature maps.
struct MemoryStats {
  size_t in_use_bytes = 0;
  size_t peak_in_use_bytes = 0;
  size_t held_bytes = 0;
  size_t peak_held_bytes = 0;
  size_t system_allocations = 0;  // calls into Option::allocator for feature maps
  size_t pool_hits = 0;           // requests served from the pool
  size_t planned_bytes = 0;       // arena size of the static plan
  size_t lower_bound_bytes = 0;   // most bytes of feature maps live at one time
};

// What an observer sees after each layer an Extractor runs (see set_observer).
struct LayerEvent {
  int layer_index = 0;            // position in the model's layer list
  const char* layer_name = "";    // valid during the callback only
  const char* layer_type = "";
  size_t in_use_bytes = 0;        // live feature maps after the layer and light-mode frees
  size_t held_bytes = 0;          // bytes held from the system allocator
  double multiply_adds = 0;       // of this layer (convolutions, InnerProduct, Gemm); else 0
  const char* kernel = "";        // the kernel it ran ("f32_conv1x1_8x48_avx512"), "" for
                                  // the layer's own code; valid during the callback only
  Precision precision = Precision::kFp32;  // what Option::precision gave this layer
};

class Net {
 public:
  Net();
  ~Net();
  Net(const Net&) = delete;
  Net& operator=(const Net&) = delete;
  Net(Net&&) noexcept;
  Net& operator=(Net&&) noexcept;

  // Options used by load() (kernel choice) and copied into new Extractors.
  Option& option() { return opt_; }
  const Option& option() const { return opt_; }

  // Prepares input `name` for `shape` instead of the shape stored in the model, from
  // the next load() on (like a free dimension in ONNX Runtime). load() fails with
  // InvalidArgument naming the input if the model has no such input, or with the
  // layer's error if a layer cannot take the resulting shapes. Shape{} removes it.
  void set_input_shape(const std::string& name, const Shape& shape);

  // Loads a .kst file (memory-mapped; weights are used in place or packed).
  Status load(const std::string& path);
  // Loads from memory. If `buffer` is 64-byte aligned it is used without a copy and
  // must stay alive and unchanged as long as this Net or any of its Extractors;
  // otherwise it is copied once and may be freed after the call.
  Status load(const void* buffer, size_t size);

  bool empty() const;
  std::vector<std::string> input_names() const;
  std::vector<std::string> output_names() const;
  // The shape the Net was prepared for; InvalidArgument for an unknown name.
  Status input_shape(const std::string& name, Shape* shape) const;
  // The type of the layer that computes blob `name` ("Convolution", "DetectionOutput");
  // empty for a network input, an unknown name, or before a successful load.
  std::string producer_type(const std::string& name) const;
  // Free-form metadata written at conversion ("mean", "norm", "labels", "task").
  // Empty string when absent.
  std::string metadata(const std::string& key) const;
  // Bytes of weights this Net holds: the kernels' packed copies plus the model's
  // weights that layers read in place (fp32 copies of F16 ones). Of a model loaded from
  // a file, the pages that hold only packed-away weights are given back at load (they
  // read back from the file if touched); a buffer given to load(buffer, size), or its
  // copy, is held whole and counts whole.
  size_t weight_bytes() const;
  // Bytes of weight data in the model file.
  size_t model_weight_bytes() const;
  // The static plan's arena size and the lower bound (see MemoryStats).
  size_t planned_bytes() const;
  size_t lower_bound_bytes() const;

  // A new inference session. The Extractor keeps the loaded model alive on its own:
  // it stays valid even if this Net is destroyed or loads another model.
  Extractor create_extractor() const;

 private:
  Option opt_;
  std::map<std::string, Shape> input_shapes_;
  std::shared_ptr<const NetImpl> impl_;
};

// One inference session: holds the feature maps of one input set. Reuse it across
// frames: with light mode and the pool (or the plan) steady-state inference makes no
// system allocations for feature maps.
class Extractor {
 public:
  ~Extractor();
  Extractor(Extractor&&) noexcept;
  Extractor& operator=(Extractor&&) noexcept;
  Extractor(const Extractor&) = delete;
  Extractor& operator=(const Extractor&) = delete;

  void set_light_mode(bool on);
  void set_num_threads(int n);
  // Runs this Extractor's inferences on `cpus` (kestrel/cpu.h: CpuSet::of({4, 5}),
  // cpu_set(PowerSave::kBig)): during extract() the calling thread and its OpenMP
  // workers are pinned there with sched_setaffinity, and the calling thread gets its
  // own mask back when extract() returns (the workers stay pinned; they serve only
  // this calling thread). With num_threads 0 the thread count becomes cpus.count().
  // An empty set turns pinning off. InvalidArgument naming the CPU if one is not
  // online (the previous setting is kept); an extract() whose mask the kernel refuses
  // (a cgroup cpuset, say) fails with InvalidArgument and the system's reason.
  Status set_cpu_set(const CpuSet& cpus);
  // Changing the strategy drops cached memory (pool blocks, arena).
  void set_memory_strategy(MemoryStrategy s);

  // Sets a network input. The Mat is referenced, not copied: keep its data unchanged
  // until the extracts of this input are done. Setting an input starts a new
  // inference: feature maps of the previous one are dropped.
  // InvalidArgument if the name is not an input or the shape differs from the
  // prepared one.
  Status input(const std::string& name, const Mat& in);
  // Computes blob `name` (running only the layers it needs) and hands it out. The Mat
  // shares memory with the Extractor and keeps it alive; `out`'s previous content is
  // released first. With kPlan, blobs that are not declared outputs are copied.
  // A blob may hold no values: a DetectionOutput that found nothing is 0 rows of 6
  // (out.h == 0, out.empty()), which is a success, not an error.
  Status extract(const std::string& name, Mat& out);

  // Called after every layer this Extractor runs, on the calling thread (profiling,
  // memory sampling). Costs nothing when unset; pass nullptr to remove.
  void set_observer(std::function<void(const LayerEvent&)> observer);

  MemoryStats memory_stats() const;
  // Zeroes the counters and sets the peaks to the current values.
  void reset_memory_stats();

 private:
  friend class Net;
  explicit Extractor(std::unique_ptr<ExtractorImpl> impl);
  std::unique_ptr<ExtractorImpl> impl_;
};

}  // namespace kestrel
