"""File-local names that would collide in a unity build, found in every test run.

CI's builds (.ci/run, .ci/sanitize.sh) compile each target as a unity build: cmake/unity.cmake pastes
its .cpp files, 8 at a time, into one translation unit, which cuts a cold build by ~3-4x.
Two files of one target that each define a helper of the same name in an anonymous
namespace (or `static`) then collide — a redefinition, or an ambiguous overload — but only
when they land in the same batch, and only in CI. This check, a CTest test, finds them in
every test run instead: a name defined at namespace scope inside `namespace {` (functions,
types, constants, variables, aliases) or as a `static` function, constant or variable, in
the same named namespace of two files of one target. Not checked: `using namespace` and
macros, which also reach the files after theirs in a batch.

A target is approximated by its folder (core/X, io/X, app, tests/mpi), except that
tests/unit is one target (unit_tests globs it whole), gpu_tests is tests/gpu with
tests/mpi/mpi_test_main.cpp, and each file of bench/ and tests/fuzz is its own.

usage: unity_names.py REPO_ROOT       exit 0 when no name repeats, 1 with one line per name
"""
import collections
import os
import re
import sys

# A definition at the start of a line (namespace scope): a function (declared on several
# lines, or defined on one), a type, a constant, an alias.
FUNCTION = re.compile(r"^(?:static\s+|inline\s+|constexpr\s+|template\s*<[^>]*>\s*)*"
                      r"[A-Za-z_][\w:<>,\s\*&]*?[\s\*&]([A-Za-z_]\w*)\s*\((?:[^;]*$|.*\)[\w\s]*\{)")
TYPE = re.compile(r"^(?:struct|class|enum(?:\s+class)?|union)\s+([A-Za-z_]\w*)\s*(?:final\s*)?[:{]")
VALUE = re.compile(r"^(?:static\s+)?(?:const|constexpr)\s+[\w:<>,\s\*&]+?\s([A-Za-z_]\w*)\s*(?:\[[^\]]*\])?\s*=")
ALIAS = re.compile(r"^using\s+([A-Za-z_]\w*)\s*=")
VARIABLE = re.compile(r"^(?:static\s+|volatile\s+|thread_local\s+)*[A-Za-z_][\w:<>,\s\*&]*?[\s\*&]([A-Za-z_]\w*)"
                      r"\s*(?:\[[^\]]*\])?\s*(?:=|\{|;)")
RAW_STRING = re.compile(r'R"([^(]*)\(')
NAMESPACE = re.compile(r"^\s*(?:inline\s+)?namespace\s*([\w:]*)\s*\{")
LITERAL = re.compile(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'')
KEYWORDS = {"if", "for", "while", "switch", "return", "operator", "main", "TEST", "TEST_F", "TEST_P"}


def targets_of(path):
    """The targets PATH is compiled into (approximated: see above)."""
    if path == "tests/mpi/mpi_test_main.cpp":
        return ["tests/mpi", "tests/gpu"]
    return [target_of(path)]


def target_of(path):
    parts = path.split("/")
    if parts[0] == "tests":
        if len(parts) > 2 and parts[1] == "unit":
            return "tests/unit"
        if parts[1] == "fuzz":
            return path  # one executable per target file
        return "/".join(parts[:2])
    if parts[0] == "bench":
        return path  # one executable per tool
    return "/".join(parts[:-1])


def local_names(text):
    """(enclosing named namespaces, name) of what has internal linkage at namespace scope: every
    definition inside an anonymous namespace, static functions and constants elsewhere."""
    names = set()
    scopes = []  # per open brace: ("ns", name) for a namespace ("" when anonymous), else None
    in_comment = False
    raw_end = None  # the end of a raw string literal that spans lines
    for line in text.splitlines():
        code = line
        if raw_end is not None:
            if raw_end not in code:
                continue
            code, raw_end = code.split(raw_end, 1)[1], None
        if in_comment:
            if "*/" not in code:
                continue
            code, in_comment = code.split("*/", 1)[1], False
        m = RAW_STRING.search(code)
        if m and ')' + m.group(1) + '"' not in code[m.end():]:
            raw_end = ")" + m.group(1) + '"'
            code = code[:m.start()]
        code = LITERAL.sub('""', code).split("//")[0]
        if "/*" in code:
            code, rest = code.split("/*", 1)
            in_comment = "*/" not in rest
        at_namespace_scope = all(s is not None for s in scopes)
        anonymous = any(s == ("ns", "") for s in scopes)
        # (namespace aliases may repeat: redeclaring one to the same namespace is allowed)
        if at_namespace_scope and not line.startswith((" ", "\t", "#", "namespace ", "return ")):
            for rx in (FUNCTION, TYPE, VALUE, ALIAS, VARIABLE):
                m = rx.match(line)
                if m and m.group(1) not in KEYWORDS:
                    if anonymous or line.startswith(("static ", "const ", "constexpr ", "volatile ")):
                        named = "::".join(s[1] for s in scopes if s[1])
                        names.add((named, m.group(1)))
                    break
        m = NAMESPACE.match(code) or re.match(r'^\s*extern\s*""\s*\{', code)
        if m:
            scopes.append(("ns", m.group(1) if m.re is NAMESPACE else "extern"))
            code = code[m.end():]
        for ch in code:
            if ch == "{":
                scopes.append(None)
            elif ch == "}" and scopes:
                scopes.pop()
    return names


def main(root):
    where = collections.defaultdict(lambda: collections.defaultdict(list))  # target -> name -> files
    for top in ("core", "io", "app", "bench", "tests"):
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for f in sorted(files):
                if not f.endswith(".cpp"):
                    continue
                path = os.path.relpath(os.path.join(dirpath, f), root)
                with open(os.path.join(root, path), encoding="utf-8") as fh:
                    for named, name in local_names(fh.read()):
                        for target in targets_of(path):
                            where[target][(named, name)].append(path)
    problems = [f"{target}: '{'::'.join(filter(None, key))}' is defined file-locally in {', '.join(paths)}: one unity "
                "batch may hold both (rename one, or share one helper)"
                for target, names in sorted(where.items()) for key, paths in sorted(names.items()) if len(paths) > 1]
    for p in problems:
        print(p)
    print(f"unity_names: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
