// One inference session: feature maps, the memory strategy, and the scheduler that
// runs the layers a requested blob needs.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "core/memory.h"
#include "core/net_impl.h"
#include "kestrel/cpu.h"
#include "kestrel/net.h"

namespace kestrel {

class ExtractorImpl {
 public:
  ExtractorImpl(std::shared_ptr<const NetImpl> net, const Option& opt);
  ~ExtractorImpl();
  ExtractorImpl(const ExtractorImpl&) = delete;
  ExtractorImpl& operator=(const ExtractorImpl&) = delete;

  void set_light_mode(bool on) { opt_.light_mode = on; }
  void set_num_threads(int n) { opt_.num_threads = n; }
  Status set_cpu_set(const CpuSet& cpus);
  void set_memory_strategy(MemoryStrategy s);
  void set_observer(std::function<void(const LayerEvent&)> f) { observer_ = std::move(f); }
  Status input(const std::string& name, const Mat& in);
  Status extract(const std::string& name, Mat& out);
  MemoryStats memory_stats() const;
  void reset_memory_stats();

 private:
  // Sizes the per-blob and per-layer state for net_ (constructor).
  void size_for_net();
  Status check_loaded() const;
  // Marks the layers the targets need that have not run yet and counts, per blob, the
  // marked layers that read it. Fails if a needed input is not set.
  Status mark_needed(const std::vector<int>& targets);
  Status run(const std::vector<int>& targets);
  // Threads a run uses: Option::num_threads, else every CPU of the pinned set or OpenMP's.
  int thread_count() const;
  Status run_layer(int li, const std::vector<int>& targets, int num_threads);
  Status allocate_blob(int b, Mat* m);
  Status allocate_aliased(int b, Mat* m);
  void drop_pending();
  Status ensure_scratch(int num_threads);
  size_t shared_workspace_bytes() const;
  size_t thread_scratch_stride() const;
  bool runs_inplace(const NetLayer& L, const std::vector<int>& targets) const;
  bool is_target(int b, const std::vector<int>& targets) const;
  void drop_blob(int b);
  void drop_computed();
  Mat fp32_copy(const Mat& m, int b) const;
  bool light() const { return opt_.light_mode || opt_.memory == MemoryStrategy::kPlan; }

  std::shared_ptr<const NetImpl> net_;
  Option opt_;
  ExtractorMemory* memory_ = nullptr;  // released with orphan(), never deleted here
  std::vector<Mat> blobs_;
  std::vector<size_t> charge_;  // feature-map bytes each held blob accounts for
  std::vector<void*> last_block_;  // pool block each blob had in the previous run
  // Concat outputs allocated early because a producer writes into them (zero-copy
  // concat); charged to in_use_ from then on. Indexed by blob.
  std::vector<Mat> pending_;
  std::vector<char> pending_charged_;
  Mat arena_;
  // Per input blob that fp16 layers read: its copy rounded to halves, kept across frames.
  std::vector<Mat> rounded_inputs_;
  Mat workspace_;
  size_t workspace_size_ = 0;  // bytes workspace_ was made for
  size_t in_use_ = 0;
  size_t peak_in_use_ = 0;
  // Scratch sized at construction so that inference does not allocate.
  std::vector<char> needed_;
  std::vector<int> remaining_;
  std::vector<int> stack_;
  std::vector<int> targets_;
  std::vector<Mat> bottoms_;
  std::vector<Mat> tops_;
  std::function<void(const LayerEvent&)> observer_;
  CpuSet cpus_;  // empty: not pinned
};

}  // namespace kestrel
