#!/usr/bin/env bash
# The Debian package, built the way a distribution build would be, then inspected and used:
#  1. configure + build a scratch tree with prefix /usr and sysconfdir /etc/opendat
#     (tests off), and run cpack -G DEB;
#  2. dpkg-deb: control fields (Depends from dpkg-shlibdeps, Conflicts, conffiles, shlibs) and the
#     file list (libdat2.so.2, providers, headers, datinfo, dat.conf, samples);
#  3. dpkg -x into a scratch root; the extracted datinfo finds the extracted dat.conf by
#     itself (relocated lookup), then opens the tcp IA with that dat.conf rewritten to name
#     the extracted providers (DAT_OVERRIDE);
#  4. builds the packaged pingpong sample with pkg-config (PKG_CONFIG_SYSROOT_DIR) against
#     the extracted headers and libdat2, and runs server + client over loopback.
#   package_test.sh <source dir> <scratch dir> <generator> <make program> <c compiler> <c++ compiler>
set -euo pipefail
src="$1"; scratch="$2"; generator="$3"; make_program="$4"; cc="$5"; cxx="$6"
for tool in dpkg-deb dpkg cpack pkg-config python3; do
  command -v "$tool" >/dev/null || { echo "SKIP: $tool not installed"; exit 77; }
done
fail() { echo "FAIL: $*"; exit 1; }

rm -rf "$scratch"; mkdir -p "$scratch"
build="$scratch/build"; root="$scratch/root"
arch=$(dpkg --print-architecture)
multiarch=$("$cc" -print-multiarch 2>/dev/null || true)
libdir=/usr/lib${multiarch:+/$multiarch}

# 1. Build and package.
echo "== configure and build $build (prefix /usr, sysconfdir /etc/opendat)"
cmake -S "$src" -B "$build" -G "$generator" -DCMAKE_MAKE_PROGRAM="$make_program" \
  -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_INSTALL_PREFIX=/usr -DCMAKE_INSTALL_SYSCONFDIR=/etc/opendat \
  -DBUILD_TESTING=OFF -DOPENDAT_BUILD_TESTS=OFF >"$scratch/configure.log" 2>&1 ||
  { tail -n 30 "$scratch/configure.log"; fail "configure"; }
cmake --build "$build" -j 2 >"$scratch/build.log" 2>&1 || { tail -n 40 "$scratch/build.log"; fail "build"; }
echo "== cpack"
(cd "$build" && cpack -G DEB --config CPackConfig.cmake -B "$scratch/package") >"$scratch/cpack.log" 2>&1 ||
  { cat "$scratch/cpack.log"; fail "cpack"; }
deb=$(ls "$scratch"/package/opendat_*_"$arch".deb 2>/dev/null | head -n1)
[ -n "$deb" ] || { cat "$scratch/cpack.log"; fail "no .deb produced"; }
echo "package: $deb"

# 2. Control fields and contents.
info=$(dpkg-deb -I "$deb")
echo "$info"
field() { dpkg-deb -f "$deb" "$1"; }
[ "$(field Package)" = opendat ] || fail "package name"
depends=$(field Depends)
want_deps="libc6 libstdc++6 libyaml-cpp"
verbs=false  # the verbs provider is built only where libibverbs-dev and librdmacm-dev are
[ -f "$build/lib/opendat/libopendat-verbs.so" ] && verbs=true && want_deps="$want_deps libibverbs1 librdmacm1"
for dep in $want_deps; do
  echo "$depends" | grep "$dep" >/dev/null || fail "Depends lacks $dep: $depends"
done
echo "$depends" | grep libdapl2 >/dev/null && fail "Depends names libdapl2 (the system's libdat2 was picked up): $depends"
field Conflicts | grep libdapl2 >/dev/null || fail "Conflicts lacks libdapl2"
field Replaces | grep libdapl2 >/dev/null || fail "Replaces lacks libdapl2"
dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./conffiles | grep -x /etc/opendat/dat.conf >/dev/null || fail "dat.conf is not a conffile"
dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./postinst | grep ldconfig >/dev/null || fail "postinst does not run ldconfig"
dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./shlibs | grep "^libdat2 2 opendat" >/dev/null || fail "no shlibs entry for libdat2"

contents=$(dpkg-deb -c "$deb" | awk '{print $6}')
files=("$libdir/libdat2.so.2" "$libdir/libdat2.so" "$libdir/opendat/libopendat-tcp.so")
$verbs && files+=("$libdir/opendat/libopendat-verbs.so")
for f in "${files[@]}" /usr/include/dat2/udat.h /usr/include/dat2/dat_trace.h \
         /usr/include/dat2/dat_registry.h /usr/bin/datinfo /etc/opendat/dat.conf \
         "$libdir/pkgconfig/dat2.pc" "$libdir/cmake/DAT2/DAT2Config.cmake" \
         /usr/share/man/man1/datinfo.1 /usr/share/man/man5/dat.conf.5 \
         /usr/share/doc/opendat/samples/pingpong.c /usr/share/doc/opendat/samples/sample_common.h; do
  echo "$contents" | grep -x "\.$f" >/dev/null || { echo "$contents"; fail "the package lacks $f"; }
done
echo "$contents" | grep '^\./etc/dat\.conf$' >/dev/null && fail "the package ships /etc/dat.conf (DAPL's file)"

# 3. Extract; datinfo from the extracted tree.
dpkg -x "$deb" "$root"
conf="$root/etc/opendat/dat.conf"
grep -q "^ofa-v2-tcp-lo .* $libdir/opendat/libopendat-tcp.so " "$conf" || { cat "$conf"; fail "dat.conf entry"; }
# No DAT_OVERRIDE, no LD_LIBRARY_PATH: datinfo's RUNPATH finds the extracted libdat2, which
# finds the extracted dat.conf relative to itself.
out=$(env -u DAT_OVERRIDE "$root/usr/bin/datinfo" -l)
echo "$out" | grep "file: $conf" >/dev/null || { echo "$out"; fail "extracted libdat2 did not choose $conf"; }
echo "$out" | grep "reason: installed (relocated)" >/dev/null || { echo "$out"; fail "not the relocated lookup"; }
# The dat.conf names /usr/...: rewrite it to the extracted providers.
sed "s|$libdir/opendat/|$root$libdir/opendat/|" "$conf" >"$scratch/dat.conf"
out=$(DAT_OVERRIDE="$scratch/dat.conf" "$root/usr/bin/datinfo" -P ofa-v2-tcp-lo) ||
  { echo "$out"; fail "datinfo -P ofa-v2-tcp-lo"; }
echo "$out" | grep "status: ok" >/dev/null || { echo "$out"; fail "datinfo did not open ofa-v2-tcp-lo"; }
echo "$out" | grep "library: $root$libdir/opendat/libopendat-tcp.so" >/dev/null || { echo "$out"; fail "provider path"; }

# 4. The packaged pingpong, built against the extracted package.
flags=$(PKG_CONFIG_SYSROOT_DIR="$root" PKG_CONFIG_LIBDIR="$root$libdir/pkgconfig" pkg-config --cflags --libs dat2)
echo "pkg-config: $flags"
"$cc" -std=c11 -Wall -Wextra -Werror -o "$scratch/pingpong" "$root/usr/share/doc/opendat/samples/pingpong.c" $flags
export LD_LIBRARY_PATH="$root$libdir" DAT_OVERRIDE="$scratch/dat.conf"
ldd "$scratch/pingpong" | grep "libdat2.so.2 => $root$libdir/libdat2.so.2" >/dev/null ||
  { ldd "$scratch/pingpong"; fail "pingpong does not use the extracted libdat2"; }
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
DAT_TRACE_LEVEL=3 timeout 60 "$scratch/pingpong" -p "$port" >"$scratch/server.out" 2>"$scratch/server.err" &
server=$!
hex=$(printf ':%04X' "$port")
for _ in $(seq 200); do
  awk -v p="$hex" '$4 == "0A" && substr($2, length($2) - 4) == p {found = 1} END {exit !found}' \
    /proc/net/tcp /proc/net/tcp6 && break
  sleep 0.05
done
client_out=$(timeout 60 "$scratch/pingpong" -h 127.0.0.1 -p "$port" -n 200 -s 1024) || {
  echo "$client_out"; cat "$scratch/server.out" "$scratch/server.err"; fail "pingpong client"; }
wait "$server" || { cat "$scratch/server.out" "$scratch/server.err"; fail "pingpong server"; }
echo "$client_out"
cat "$scratch/server.out"
echo "$client_out" | grep "200 round trips of 1024 bytes, average round trip" >/dev/null || fail "pingpong output"
grep -q "using config file $scratch/dat.conf (DAT_OVERRIDE)" "$scratch/server.err" ||
  { cat "$scratch/server.err"; fail "the server did not run on OpenDAT's libdat2 with the rewritten dat.conf"; }
echo "package test passed"
