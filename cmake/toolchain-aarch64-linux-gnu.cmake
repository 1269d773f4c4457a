# Cross build for 64-bit ARM Linux boards (Debian's g++-aarch64-linux-gnu). Tests run
# under qemu-aarch64 (Debian's qemu-user) with the cross sysroot's libraries.
#   cmake -S . -B build/aarch64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64-linux-gnu.cmake
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(KESTREL_AARCH64_SYSROOT /usr/aarch64-linux-gnu CACHE PATH "Libraries qemu-aarch64 loads")
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L ${KESTREL_AARCH64_SYSROOT})
# Target libraries from the cross sysroot; header-only dependencies (flatbuffers,
# doctest, stb) and build tools (flatc) from the host.
set(CMAKE_FIND_ROOT_PATH ${KESTREL_AARCH64_SYSROOT})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
