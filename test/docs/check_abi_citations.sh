#!/bin/bash
# Every citation of docs/dat-abi.md in the sources ("dat-abi.md §5.4", "§10.2 and §5.6")
# must name a section that exists there, so a reader who follows a comment finds the fact.
# (Only the numbers on the line that names the file are checked.)
#   check_abi_citations.sh <source dir>
set -u
root=$1
doc="$root/docs/dat-abi.md"
[[ -f $doc ]] || { echo "FAIL: $doc is missing"; exit 1; }
# Section numbers the document defines: "## 5. ..." -> 5, "### 5.4 ..." -> 5.4
sections=$(grep -oE '^#{2,3} [0-9]+(\.[0-9]+)?[. ]' "$doc" | grep -oE '[0-9]+(\.[0-9]+)?')
fail=0 cited=0
while IFS=: read -r file line text; do
    # All §-numbers on a line that cites the document (a citation may name several).
    for s in $(grep -oE '§[0-9]+(\.[0-9]+)?' <<<"$text" | tr -d '§'); do
        cited=$((cited + 1))
        if ! grep -qxF "$s" <<<"$sections"; then
            echo "FAIL: $file:$line cites dat-abi.md §$s, which does not exist"
            fail=1
        fi
    done
done < <(cd "$root" && grep -rnE 'dat-abi\.md' --include='*.c' --include='*.cpp' --include='*.h' \
             --include='*.hpp' --include='*.sh' --include='*.py' --include='*.md' \
             common dat registry providers tools samples include test docs README.md |
         grep -v '^docs/dat-abi.md:' | grep -v '^test/docs/')
[[ $cited -gt 0 ]] || { echo "FAIL: found no citation at all (is the search broken?)"; exit 1; }
[[ $fail -eq 0 ]] && echo "ok: $cited section citations of docs/dat-abi.md, all present"
exit $fail
