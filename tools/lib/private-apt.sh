# Shared by the fetch scripts (source it): a private apt configuration over Debian's archive with
# the non-free and contrib components (apt/cudatool-debian-nonfree.sources), so packages can be
# downloaded without root and without touching the system's apt sources.
#
#   private_apt_init TAG       # checks the tools, makes a temporary state dir, updates the index
#   private_apt_download PKG=VER DIR   # apt-get download into DIR; prints why on failure
#
# TAG prefixes messages ("fetch-drivers: …"). The state dir is removed when the script exits.

private_apt_init() {
  _apt_tag=$1
  local here
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  for tool in apt-get dpkg-deb; do
    command -v "$tool" >/dev/null || { echo "$_apt_tag: $tool is required (Debian/Ubuntu)" >&2; exit 2; }
  done
  _apt_state=$(mktemp -d)
  trap 'rm -rf "$_apt_state"' EXIT
  mkdir -p "$_apt_state/lists/partial" "$_apt_state/cache/archives/partial" \
    "$_apt_state/etc/sources.list.d"
  cp "$here/apt/cudatool-debian-nonfree.sources" "$_apt_state/etc/sources.list.d/"
  : > "$_apt_state/etc/sources.list"
  apt_opts=(
    -o "Dir::Etc::SourceList=$_apt_state/etc/sources.list"
    -o "Dir::Etc::SourceParts=$_apt_state/etc/sources.list.d"
    -o "Dir::State::Lists=$_apt_state/lists"
    -o "Dir::Cache=$_apt_state/cache"
    -o "Dir::State::Status=/dev/null"
    -o "Debug::NoLocking=1"
    -o "APT::Sandbox::User=$(id -un)"
    -o "Acquire::Retries=3"
  )
  echo "$_apt_tag: updating a private package index (Debian non-free and contrib)…"
  apt-get "${apt_opts[@]}" -qq update
}

private_apt_download() {
  local spec=$1 dir=$2
  if ! (cd "$dir" && apt-get "${apt_opts[@]}" -qq download "$spec"); then
    echo "$_apt_tag: could not download $spec; is deb.debian.org reachable, and is this version" \
         "still in the archive? (edit the list in tools/)" >&2
    return 1
  fi
}
