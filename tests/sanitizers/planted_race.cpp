// A deliberate data race between two std::threads: `make test-tsan` passes only if ThreadSanitizer
// reports it (tests/sanitizers/CMakeLists.txt), so a TSan build that silently sees nothing fails.

#include <cstdio>
#include <thread>

namespace {

int shared = 0;  // written by both threads, with nothing ordering the writes

void bump() {
  for (int i = 0; i < 1000; ++i) shared = shared + 1;
}

}  // namespace

int main() {
  std::thread a(bump), b(bump);
  a.join();
  b.join();
  std::printf("shared = %d\n", shared);
  return 0;
}
