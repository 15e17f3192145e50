#!/bin/sh
# SPDX-License-Identifier: MIT
#
# The documentation holds (TAP output, run by make check):
#   1. the generated pages are what the code makes now: docs/gen/gendocs
#      writes docs/reference/{tables,variables,config,http}.md and
#      heapadmind(8) with its config keys into a temporary directory, and
#      each must equal the committed file (else: run `make docs`); a
#      catalogue entry without a doc string fails here, named;
#   2. every link in README.md and docs/ resolves: the file exists, and
#      an #anchor is a heading of that page as GitHub names it;
#   3. every page under docs/ is in docs/Makemodule.am's HA_DOCS_PAGES
#      (a tarball has it), and every topic page is in the README's
#      contents;
#   4. every fenced block (an example, a command, an output) has, on the
#      line before it, <!-- test: PATH ... --> naming existing tests that
#      run it or check what it shows, or <!-- untested: why -->;
#   5. the README stays a front page (at most 200 lines) and shows the
#      quick start's two commands as they are;
#   6. the checker itself fails on a tree with a broken link (one wrapped
#      onto a second line too), a broken anchor, an unmarked block and a
#      marker naming no file;
#   7. docs/layout.md stays the map of the tree: every .c file of a code
#      folder is named in that folder's row, and every file a row names
#      exists; the check fails on a tree made to miss both.
#
# Usage: test/docs.sh                  (make check: HA_TOP_SRCDIR and
#                                       HA_TOP_BUILDDIR say where)
#        test/docs.sh --check DIR      (checks 2-5 only, on DIR)
set -u

checker() {
    python3 - "$1" <<'EOF'
import os, re, sys

top = sys.argv[1]
problems = []

def rel(p):
    return os.path.relpath(p, top)

def pages():
    out = [os.path.join(top, 'README.md')]
    for d, _, fs in os.walk(os.path.join(top, 'docs')):
        for f in sorted(fs):
            if f.endswith('.md'):
                out.append(os.path.join(d, f))
    return sorted(out)

def strip_code(line):
    """The line without its code spans, whose brackets are no links."""
    return re.sub(r'`[^`]*`', '', line)

def slug(title):
    """GitHub's anchor for a heading: lower case, markup and punctuation
    other than '-' and '_' dropped, spaces made '-'."""
    t = re.sub(r'\[([^\]]*)\]\([^)]*\)', r'\1', title)
    t = t.replace('`', '').lower()
    t = re.sub(r'[^\w\- ]', '', t)
    return t.replace(' ', '-')

anchors_of = {}
def anchors(path):
    if path not in anchors_of:
        seen, found, fence = {}, set(), False
        for line in open(path, encoding='utf-8').read().split('\n'):
            if line.startswith('```'):
                fence = not fence
                continue
            m = None if fence else re.match(r'^#{1,6} (.*)$', line)
            if m:
                s = slug(m.group(1).strip())
                n = seen.get(s, 0)
                seen[s] = n + 1
                found.add(s if n == 0 else '%s-%d' % (s, n))
        anchors_of[path] = found
    return anchors_of[path]

link = re.compile(r'\[[^\]]*\]\(([^)\s]+)\)')
marker = re.compile(r'^<!-- (test|untested): (.*) -->$')
all_pages = pages()
for page in all_pages:
    lines = open(page, encoding='utf-8').read().split('\n')
    fence = False
    for n, line in enumerate(lines, 1):
        where = '%s:%d' % (rel(page), n)
        if line.startswith('```'):
            if not fence:
                m = marker.match(lines[n - 2]) if n >= 2 else None
                if m is None:
                    problems.append('%s: a fenced block without <!-- test: '
                                    'PATH --> or <!-- untested: why --> on '
                                    'the line before it' % where)
                elif m.group(1) == 'untested' and not m.group(2).strip():
                    problems.append('%s: <!-- untested: --> says no why'
                                    % where)
                elif m.group(1) == 'test':
                    paths = [w.rstrip('.,;:') for w in m.group(2).split()
                             if '/' in w and '://' not in w]
                    if not paths:
                        problems.append('%s: <!-- test: --> names no test '
                                        '(a path in the tree)' % where)
                    for p in paths:
                        if not os.path.isfile(os.path.join(top, p)):
                            problems.append('%s: <!-- test: --> names %s, '
                                            'which is not in the tree'
                                            % (where, p))
            fence = not fence
            continue
        if fence:
            continue
        # A link may wrap onto the next line: look at both, and take the
        # links that start on this one.
        nxt = lines[n] if n < len(lines) and not lines[n].startswith('```') \
            else ''
        here = strip_code(line)
        for m in link.finditer(here + ' ' + strip_code(nxt)):
            if m.start() >= len(here):
                break
            target = m.group(1)
            if re.match(r'^[a-z]+:', target):
                continue
            path, _, anchor = target.partition('#')
            dest = page if path == '' else os.path.normpath(
                os.path.join(os.path.dirname(page), path))
            if not os.path.exists(dest):
                problems.append('%s: link to %s: no such file' % (where,
                                                                target))
            elif anchor and not dest.endswith('.md'):
                problems.append('%s: link to %s: an anchor into a file that '
                                'is not a page' % (where, target))
            elif anchor and anchor not in anchors(dest):
                problems.append('%s: link to %s: %s has no heading whose '
                                'anchor is #%s' % (where, target, rel(dest),
                                                   anchor))

# The pages a tarball carries, and the README's contents.
mk = os.path.join(top, 'docs', 'Makemodule.am')
listed = set()
if os.path.isfile(mk):
    text = open(mk, encoding='utf-8').read()
    m = re.search(r'HA_DOCS_PAGES = \\\n((?:\t.*\n)*)', text)
    if m:
        listed = set(w for w in m.group(1).split()
                     if w.endswith('.md'))
for page in all_pages:
    r = rel(page)
    if r.startswith('docs/') and r not in listed:
        problems.append('%s: not in docs/Makemodule.am\'s HA_DOCS_PAGES (a '
                        'tarball would not have it)' % r)
for r in sorted(listed):
    if not os.path.isfile(os.path.join(top, r)):
        problems.append('docs/Makemodule.am lists %s, which is not there' % r)
readme = open(os.path.join(top, 'README.md'), encoding='utf-8').read()
for page in all_pages:
    r = rel(page)
    if re.match(r'^docs/[^/]+\.md$', r) and '](%s)' % r not in readme:
        problems.append('%s: not in the README\'s contents' % r)

# The README is the front page.
n = readme.count('\n')
if n > 200:
    problems.append('README.md: %d lines; it is the front page (at most '
                    '200): move the detail into docs/' % n)
for cmd in ('./bootstrap && daemon/heapadmind -f -c etc/heapadmin.cnf',
            './bootstrap && make check'):
    if '\n%s\n' % cmd not in readme:
        problems.append('README.md: the quick start\'s "%s" is missing'
                        % cmd)

for p in problems:
    print(p)
print('%d pages, %d problems' % (len(all_pages), len(problems)))
sys.exit(1 if problems else 0)
EOF
}

if [ "${1:-}" = "--check" ]; then
    checker "$2"
    exit $?
fi

# layout DIR: what docs/layout.md's rows miss or name wrongly, one line
# each; exit 1 if anything.
layout() {
    python3 - "$1" <<'EOF'
import os, re, sys

top = sys.argv[1]
rows = {}
for line in open(os.path.join(top, 'docs/layout.md')):
    m = re.match(r'^\| (`[^|]*`) \| (.*) \|$', line.rstrip('\n'))
    if m:
        for d in re.findall(r'`([a-z]+)/`', m.group(1)):
            rows[d] = m.group(2)
# Folders of code; the others' rows describe, not list.
code = [d for d in rows if d not in ('etc', 'test', 'bench', 'example', 'docs',
                                     'deps', 'debian', 'include')]
problems = []
for d in code:
    cell = rows[d]
    named = set(re.findall(r'`(?:[a-z]+/)?([A-Za-z0-9_.-]+\.[ch])\b', cell))
    for f in sorted(os.listdir(os.path.join(top, d))):
        if f.endswith('.c') and f not in named:
            problems.append('%s/%s: not named in its row of docs/layout.md'
                            % (d, f))
    for n in sorted(named):
        if not any(os.path.exists(os.path.join(top, e, n)) for e in rows):
            problems.append('docs/layout.md: the %s/ row names %s, which no '
                            'folder has' % (d, n))
print('\n'.join(problems))
sys.exit(1 if problems else 0)
EOF
}

src=${HA_TOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
build=${HA_TOP_BUILDDIR:-$src}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/docs.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
echo "1..5"

# 1: the generated pages.
gen=$build/docs/gen/gendocs
if [ ! -x "$gen" ]; then
    echo "not ok 1 - the reference pages are what make docs writes"
    echo "# no generator at $gen (make docs/gen/gendocs)"
    fail=1
elif ! "$gen" "$tmp" "$src/daemon/heapadmind.8" >"$tmp/gen.log" 2>&1; then
    echo "not ok 1 - the reference pages are what make docs writes"
    sed 's/^/# /' "$tmp/gen.log"
    fail=1
else
    stale=
    for f in tables variables config http; do
        cmp -s "$tmp/$f.md" "$src/docs/reference/$f.md" ||
            stale="$stale docs/reference/$f.md"
    done
    cmp -s "$tmp/heapadmind.8" "$src/daemon/heapadmind.8" ||
        stale="$stale daemon/heapadmind.8"
    if [ -z "$stale" ]; then
        echo "ok 1 - the reference pages and heapadmind(8)'s keys are what make docs writes"
    else
        echo "not ok 1 - the reference pages are what make docs writes"
        echo "# stale:$stale: run \`make docs\` and commit what it changes"
        for f in $stale; do
            case $f in
            daemon/*) new=$tmp/heapadmind.8 ;;
            *) new=$tmp/$(basename "$f") ;;
            esac
            diff -u "$src/$f" "$new" | head -n 20 | sed 's/^/# /'
        done
        fail=1
    fi
fi

# 2: links, the page lists, the examples' markers, the README.
if out=$(checker "$src" 2>&1); then
    echo "ok 2 - links resolve, every page is listed, every example names its test"
    echo "$out" | sed 's/^/# /'
else
    echo "not ok 2 - links, page lists, examples' markers, the README"
    echo "$out" | sed 's/^/# /'
    fail=1
fi

# 3: the checker finds what it must on a tree made to fail.
bad=$tmp/bad
mkdir -p "$bad/docs"
cat >"$bad/README.md" <<'EOF'
./bootstrap && daemon/heapadmind -f -c etc/heapadmin.cnf
./bootstrap && make check

[a page](docs/a.md) and [gone](docs/gone.md), [a
wrapped](docs/wrapped.md) one

```sh
echo unmarked
```
EOF
cat >"$bad/docs/a.md" <<'EOF'
# A page

## A heading: with `code`

[here](#a-heading-with-code) [there](#no-such-heading)

<!-- test: test/nosuch.sh -->
```sql
SELECT 1;
```
EOF
printf 'HA_DOCS_PAGES = \\\n\tdocs/a.md \\\n\t$(NULL)\n' >"$bad/docs/Makemodule.am"
out=$(checker "$bad" 2>&1)
rc=$?
missed=
for want in "docs/gone.md: no such file" "docs/wrapped.md: no such file" \
    "#no-such-heading" "README.md:7: a fenced block without" \
    "names test/nosuch.sh"; do
    case $out in *"$want"*) ;; *) missed="$missed [$want]" ;; esac
done
case $out in *"#a-heading-with-code"*) missed="$missed [a good anchor refused]" ;; esac
if [ "$rc" -ne 0 ] && [ -z "$missed" ]; then
    echo "ok 3 - the checker fails on a broken link (wrapped too), a broken anchor, an unmarked block and a marker naming no file"
else
    echo "not ok 3 - the checker fails where it must (missed:$missed)"
    echo "$out" | sed 's/^/# /'
    fail=1
fi

# 4: the layout page names every file, and only files that exist.
if out=$(layout "$src" 2>&1); then
    echo "ok 4 - docs/layout.md names every .c file in its folder's row, and only files that exist"
else
    echo "not ok 4 - docs/layout.md is the map of the tree"
    echo "$out" | sed 's/^/# /'
    fail=1
fi

# 5: ... and that check fails on a tree made to miss a file and name a
# gone one.
mkdir -p "$tmp/lay/docs" "$tmp/lay/core"
: >"$tmp/lay/core/here.c"
: >"$tmp/lay/core/unnamed.c"
printf '| path | what |\n|---|---|\n| `core/` | a file (`here.c`), a gone one (`gone.c`) |\n' \
    >"$tmp/lay/docs/layout.md"
out=$(layout "$tmp/lay" 2>&1)
rc=$?
case $out in
*"core/unnamed.c: not named"*"names gone.c"*) found=yes ;;
*) found= ;;
esac
case $out in *here.c*) found= ;; esac
if [ "$rc" -ne 0 ] && [ -n "$found" ]; then
    echo "ok 5 - the layout check fails on a file left out and on a file that is gone"
else
    echo "not ok 5 - the layout check fails where it must"
    echo "$out" | sed 's/^/# /'
    fail=1
fi
exit $fail
