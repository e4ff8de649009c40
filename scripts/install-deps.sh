#!/usr/bin/env bash
# Installs everything OpenDAT needs to build and test, from Debian's packages.
# Safe to run again: it only calls apt-get when a package is missing.
set -euo pipefail

packages=(
  # toolchain and build
  build-essential cmake ninja-build pkg-config git
  # libraries we build against
  libyaml-cpp-dev libibverbs-dev librdmacm-dev
  # tests
  googletest libgtest-dev libgmock-dev python3 clang libclang-rt-dev clang-format iproute2 procps psmisc
  valgrind
  # the reference DAT stack we test against (headers, libraries, dapl2-utils binaries)
  libdapl-dev libdapl2 dapl2-utils
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
