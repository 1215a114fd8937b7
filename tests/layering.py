"""The one-way layering of lockstep's sources, checked on every #include "...".

    base <- io <- config <- dist <- {model, optim, data} <- eval <- train <- tools <- app

A file may include its own folder and the folders below it, never above or beside it (the
three middle folders do not include each other). io's folders have their own order:
util <- dataset <- {loader, import}; util <- records. app may use everything; nothing
includes app. Also: app/ stays thin (no file over APP_MAX_LINES lines), and no source file
grows past FILE_MAX_LINES (STYLE rule 15: aim under ~400). And JSON read from a file is
converted through io::json_as / json_get (io/util/json_io.hpp), never nlohmann's own
get<T>() for a number or a container: that casts 1e300 into an int unchecked (undefined
behaviour; fuzz_manifest found it). get<std::string>() and get<bool>() throw cleanly and
stay allowed. And nothing calls std::filesystem::remove_all or its recursive iterator
(core, io, app, tests, bench): the torch wheel's libtorch.so exports its own remove_all,
which the dynamic linker binds, and it calls a libstdc++ 13 symbol Debian 12 lacks — a jump
to address 0 on any non-empty directory (io::remove_tree instead; the mpi_tests flake of
stops 47 and 51: a directory an earlier process of the same pid had left).

usage: layering.py REPO_ROOT       exit 0 when every rule holds, 1 with one line per breach
"""
import os
import re
import sys

# layer -> the layers it may include (besides itself)
CORE = ["core/base", "io", "core/config", "core/dist", "core/model", "core/optim", "core/data",
        "core/eval", "core/train", "core/tools", "app"]
ALLOWED = {
    "core/base": set(),
    "io/util": {"core/base"},
    "io/dataset": {"core/base", "io/util"},
    "io/loader": {"core/base", "io/util", "io/dataset"},
    "io/import": {"core/base", "io/util", "io/dataset", "io/loader"},
    "io/records": {"core/base", "io/util"},
    "core/config": {"core/base"},
    "core/dist": {"core/base", "core/config", "io/util"},
    "core/model": {"core/base", "core/config", "core/dist", "io/util", "io/dataset", "io/records"},
    "core/optim": {"core/base", "core/config", "core/dist"},
    "core/data": {"core/base", "core/config", "core/dist", "io/util", "io/dataset", "io/loader"},
    "core/eval": {"core/base", "core/config", "core/dist", "core/model", "core/optim", "core/data", "io/util",
                  "io/dataset", "io/loader"},
    "core/train": {"core/base", "core/config", "core/dist", "core/model", "core/optim", "core/data", "core/eval",
                   "io/util", "io/dataset", "io/loader", "io/records"},
    "core/tools": {"core/base", "core/config", "core/dist", "core/model", "core/optim", "core/data", "core/eval",
                   "core/train", "io/util", "io/dataset", "io/loader", "io/records", "io/import"},
    "app": {"core/base", "core/config", "core/dist", "core/model", "core/optim", "core/data", "core/eval",
            "core/train", "core/tools", "io/util", "io/dataset", "io/loader", "io/records", "io/import"},
}
APP_MAX_LINES = 200  # options.cpp, the one table of every option, is allowed more
FILE_MAX_LINES = 450
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
RAW_JSON_GET = re.compile(r'\bget<(?!std::string>|bool>)')  # lines with std::get< (tuples) are skipped
JSON_IO = ("io/util/json_io.hpp", "io/util/json_io.cpp")
NO_REMOVE_ALL = re.compile(r'\bremove_all\b|\brecursive_directory_iterator\b')  # a call or its address
BLOCK_COMMENT = re.compile(r'/\*.*?\*/', re.S)


def code_of(lines):
    """LINES without their comments (// and /* */, newlines kept: line numbers hold)."""
    text = BLOCK_COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), "\n".join(lines))
    return [line.split("//")[0] for line in text.split("\n")]


def folder_of(path):
    parts = path.split("/")
    return "/".join(parts[:2]) if parts[0] in ("core", "io") else parts[0]


def sources(root, tops, suffixes):
    """(relative path, file name, lines) of every file under ROOT/TOPS ending in SUFFIXES."""
    for top in tops:
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for f in sorted(files):
                if f.endswith(suffixes):
                    path = os.path.relpath(os.path.join(dirpath, f), root)
                    text = open(os.path.join(root, path), encoding="utf-8").read()
                    yield path, f, text.split("\n")


def main(root):
    problems = []
    for path, f, lines in sources(root, ("core", "io", "app"), (".hpp", ".cpp", ".in")):
        me = folder_of(path)
        if me not in ALLOWED:
            problems.append(f"{path}: folder {me} is not in the layering (tests/layering.py)")
            continue
        for n, line in enumerate(lines, 1):
            if path not in JSON_IO and RAW_JSON_GET.search(line) and "std::get<" not in line:
                problems.append(f"{path}:{n}: nlohmann get<T>() on a number/container: use io::json_as")
            m = INCLUDE.match(line)
            if not m:
                continue
            target = folder_of(m.group(1))
            if target != me and target not in ALLOWED[me]:
                problems.append(f"{path}:{n}: includes {m.group(1)} ({target} is not below {me})")
        limit = APP_MAX_LINES if me == "app" and f != "options.cpp" else FILE_MAX_LINES
        if len(lines) > limit:
            problems.append(f"{path}: {len(lines)} lines (limit {limit} for {me})")
    for path, _, lines in sources(root, ("core", "io", "app", "tests", "bench"), (".hpp", ".cpp", ".cuh", ".cu", ".h", ".cc")):
        for n, line in enumerate(code_of(lines), 1):
            if NO_REMOVE_ALL.search(line):
                problems.append(f"{path}:{n}: std::filesystem::remove_all (and its recursive iterator) binds "
                                "libtorch.so's copy, which jumps to address 0 on Debian 12: use "
                                "io::remove_tree (io/util/file_util.hpp)")
    for p in problems:
        print(p)
    print(f"layering: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
