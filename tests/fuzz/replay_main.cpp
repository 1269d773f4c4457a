// main() for the fuzz targets without libFuzzer: runs LLVMFuzzerTestOneInput once on
// every file named on the command line or found (recursively) in a named directory,
// so kept crash inputs and the seed corpus replay in an ordinary build (gcc, any
// sanitizer or none). A missing path is reported and skipped: git keeps no empty
// regression directory.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

namespace fs = std::filesystem;

bool replay(const fs::path& file) {
  std::ifstream f(file, std::ios::binary);
  if (!f) {
    std::fprintf(stderr, "replay: cannot read %s\n", file.c_str());
    return false;
  }
  const std::vector<char> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  // A copy of exactly the file's size, so ASan sees any read past the input's end.
  std::vector<uint8_t> data(bytes.begin(), bytes.end());
  LLVMFuzzerTestOneInput(data.empty() ? nullptr : data.data(), data.size());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<fs::path> files;
  for (int i = 1; i < argc; ++i) {
    const fs::path p(argv[i]);
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      for (const auto& e : fs::recursive_directory_iterator(p, ec)) {
        if (e.is_regular_file()) files.push_back(e.path());
      }
    } else if (fs::is_regular_file(p, ec)) {
      files.push_back(p);
    } else {
      std::printf("replay: %s does not exist, skipped\n", p.c_str());
    }
  }
  // Sorted, so a failure reproduces in the same order.
  std::sort(files.begin(), files.end());
  size_t n = 0;
  for (const fs::path& f : files) {
    std::printf("replay: %s\n", f.c_str());
    std::fflush(stdout);  // the last name printed is the input that crashed
    if (!replay(f)) return 1;
    ++n;
  }
  std::printf("replayed %zu inputs\n", n);
  return 0;
}
