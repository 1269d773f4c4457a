# Cross build for 32-bit ARM Linux boards (ARMv7-A with NEON, hard-float ABI: Debian's
# g++-arm-linux-gnueabihf). Tests run under qemu-arm (Debian's qemu-user) with the
# cross sysroot's libraries.
#   cmake -S . -B build/armv7 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-armv7-linux-gnueabihf.cmake
#
# Kernels: src/arm/ is written for AArch64 (vfmaq_laneq_f32, vaddvq_f32, vdivq_f32 and
# others exist only in A64), so this build takes the portable reference kernels
# (KESTREL_ARCH "generic", chosen in CMakeLists.txt from CMAKE_SYSTEM_PROCESSOR). The
# compiler may still use NEON for scalar code where IEEE semantics allow.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR armv7l)
set(CMAKE_C_COMPILER arm-linux-gnueabihf-gcc)
set(CMAKE_CXX_COMPILER arm-linux-gnueabihf-g++)
# -Wno-psabi: GCC notes that passing 8-byte-aligned structs changed in GCC 7.1; every
# object here is built by one compiler, so the note is noise.
set(CMAKE_C_FLAGS_INIT "-march=armv7-a -mfpu=neon -mfloat-abi=hard -Wno-psabi")
set(CMAKE_CXX_FLAGS_INIT "-march=armv7-a -mfpu=neon -mfloat-abi=hard -Wno-psabi")
set(KESTREL_ARMV7_SYSROOT /usr/arm-linux-gnueabihf CACHE PATH "Libraries qemu-arm loads")
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-arm -L ${KESTREL_ARMV7_SYSROOT})
# Target libraries from the cross sysroot; header-only dependencies (flatbuffers,
# doctest, stb) and build tools (flatc) from the host.
set(CMAKE_FIND_ROOT_PATH ${KESTREL_ARMV7_SYSROOT})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
