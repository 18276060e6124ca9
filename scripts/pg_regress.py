#!/usr/bin/env python3
"""Replay PostgreSQL's own regression files (../shared/pg-regress/) against weir or PostgreSQL.

    scripts/pg_regress.py                      # a fresh weir (target/debug/weir, temp data dir)
    scripts/pg_regress.py --bin PATH          # that weir binary
    scripts/pg_regress.py --pg [URL]          # PostgreSQL 15 (default postgres://postgres@127.0.0.1:55432/postgres),
                                              # in a fresh database made as pg_regress makes it, dropped after
    scripts/pg_regress.py --url URL           # a running server, as is (no fresh database)
    scripts/pg_regress.py int4 join           # only these files (still in the README's order)
    options: --dir DIR (the pg-regress directory), --failures FILE (write every failing statement),
             --timeout SECONDS (per statement, default 20), -v (print failures as they happen)

How it works. Each .sql file is split into statements the way psql splits its input (quotes,
dollar quotes, comments, parentheses; `;` ends a statement; a backslash starts a meta-command;
`:name` / `:'name'` interpolate \\set / \\getenv variables). `COPY ... FROM :'file'` is sent as
`COPY ... FROM STDIN` with the file's rows, inline COPY data is sent the same way. The expected
.out file is psql's echo of every input line followed by the answer; the runner walks it line by
line along the input, so the lines between one statement's last input line and the next input
line are that statement's expected answer: a table (header, dashes, rows, "(N rows)"), an ERROR
block, notices, or nothing. A statement passes when its outcome matches: the same number of
columns and the same cells (as text, NULL shown as psql's `\\pset null`; compared in order when
the statement says ORDER BY, as multisets otherwise), an error where an error is expected (the
message is compared and counted separately), or no rows where psql printed nothing. EXPLAIN
statements and `\\d` meta-commands are counted but never pass (their output is PostgreSQL's
plans and catalog). Each file runs in a new session with pg_regress's settings in the start-up
packet (datestyle, timezone, intervalstyle, ...); a start-up packet the server refuses falls
back to SET statements. Prints a table of passed / total per file and the totals.
"""

import argparse
import os
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time
import unicodedata

from psycopg import pq

ORDER = (
    "test_setup boolean text int2 int4 int8 float4 float8 numeric strings date timestamp "
    "timestamptz interval expressions insert create_view select select_distinct "
    "select_distinct_on select_implicit union case join aggregates update delete window with"
).split()

SETTINGS = [
    ("datestyle", "Postgres, MDY"),
    ("timezone", "America/Los_Angeles"),
    ("intervalstyle", "postgres_verbose"),
    ("lc_messages", "C"),
    ("lc_monetary", "C"),
    ("lc_numeric", "C"),
    ("lc_time", "C"),
    ("bytea_output", "hex"),
]

DEFAULT_PG = "postgres://postgres@127.0.0.1:55432/postgres"

# ---------------------------------------------------------------------------------------------
# Splitting a .sql file as psql does


class Item:
    """A statement or a meta-command of the input, with the input line where psql runs it."""

    def __init__(self, kind, text, line):
        self.kind = kind  # 'sql' | 'meta'
        self.text = text
        self.line = line  # 0-based index of the line that completes it
        self.copy_data = None  # list of lines for COPY FROM STDIN


def interpolate_var(name, quote, variables):
    val = variables.get(name)
    if val is None:
        return None
    if quote == "'":
        return "'" + val.replace("'", "''") + "'"
    if quote == '"':
        return '"' + val.replace('"', '""') + '"'
    return val


def meta_args(rest, variables):
    """psql's argument parsing for the few meta-commands used: words, 'quoted', :var, :'var'."""
    args = []
    i = 0
    n = len(rest)
    while i < n:
        while i < n and rest[i].isspace():
            i += 1
        if i >= n:
            break
        word = ""
        while i < n and not rest[i].isspace():
            c = rest[i]
            if c == "'":
                i += 1
                while i < n:
                    if rest[i] == "'" and i + 1 < n and rest[i + 1] == "'":
                        word += "'"
                        i += 2
                    elif rest[i] == "'":
                        i += 1
                        break
                    elif rest[i] == "\\" and i + 1 < n:
                        nxt = rest[i + 1]
                        word += {"n": "\n", "t": "\t"}.get(nxt, nxt)
                        i += 2
                    else:
                        word += rest[i]
                        i += 1
            elif c == ":" and i + 1 < n and (rest[i + 1].isalnum() or rest[i + 1] == "_"):
                j = i + 1
                while j < n and (rest[j].isalnum() or rest[j] == "_"):
                    j += 1
                word += variables.get(rest[i + 1 : j], "")
                i = j
            else:
                word += c
                i += 1
        args.append(word)
    return args


COPY_STDIN = re.compile(r"^\s*copy\b.*\bfrom\s+(stdin|stdout)\b", re.I | re.S)
COPY_FILE = re.compile(r"^(\s*copy\b.*\bfrom\s+)('(?:[^']|'')*')(.*)$", re.I | re.S)


def split_file(lines, variables, env):
    """Returns the items of a file and the set of line indexes psql does not echo (COPY data,
    empty lines)."""
    items = []
    data_lines = set()
    buf = ""
    depth = 0
    state = None  # None, "'", '"', '$tag$', '/*'
    comment_depth = 0
    esc = False
    idents = []
    begin_depth = 0
    std_strings = True
    i = 0
    while i < len(lines):
        line = lines[i]
        j = 0
        n = len(line)
        if line == "" and state is None:
            # psql neither echoes nor reads an empty line outside a literal or comment
            data_lines.add(i)
        while j < n:
            c = line[j]
            if state is None:
                if c == "-" and line.startswith("--", j):
                    buf += line[j:]
                    j = n
                    continue
                if c == "/" and line.startswith("/*", j):
                    state = "/*"
                    comment_depth = 1
                    buf += "/*"
                    j += 2
                    continue
                if c.isalpha() or c == "_":
                    m = re.match(r"[A-Za-z_][A-Za-z0-9_$]*", line[j:])
                    word = m.group(0)
                    if j + len(word) < n and line[j + len(word)] == "'" and word.lower() in ("e", "b", "x", "u&", "n"):
                        pass  # a prefixed literal: handled at the quote
                    else:
                        # psql's heuristic for CREATE [OR REPLACE] FUNCTION|PROCEDURE ... BEGIN ... END
                        w = word.lower()
                        if w in ("create", "function", "procedure", "or", "replace") and len(idents) < 4:
                            idents.append(w[0])
                        elif len(idents) < 4:
                            idents.append("")
                        if (
                            idents[:1] == ["c"]
                            and (idents[1:2] in (["f"], ["p"]) or (idents[1:3] == ["o", "r"] and idents[3:4] in (["f"], ["p"])))
                            and depth == 0
                        ):
                            if w == "begin":
                                begin_depth += 1
                            elif w == "case" and begin_depth >= 1:
                                begin_depth += 1
                            elif w == "end" and begin_depth > 0:
                                begin_depth -= 1
                        buf += word
                        j += len(word)
                        continue
                if c == "'":
                    state = "'"
                    esc = bool(buf) and buf[-1] in "eE" and (len(buf) < 2 or not (buf[-2].isalnum() or buf[-2] == "_"))
                    esc = esc or (not std_strings and not buf.lower().endswith("u&"))
                    buf += c
                    j += 1
                    continue
                if c == '"':
                    state = '"'
                    buf += c
                    j += 1
                    continue
                if c == "$":
                    m = re.match(r"\$([A-Za-z_][A-Za-z0-9_]*)?\$", line[j:])
                    if m and not (buf and (buf[-1].isalnum() or buf[-1] == "_")):
                        state = m.group(0)
                        buf += state
                        j += len(state)
                        continue
                if c == ":" and j + 1 < n:
                    if line[j + 1] == ":":
                        buf += "::"
                        j += 2
                        continue
                    m = re.match(r":(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1", line[j:])
                    if m:
                        val = interpolate_var(m.group(2), m.group(1), variables)
                        if val is not None and m.group(1):
                            buf += val
                            j += len(m.group(0))
                            continue
                        if val is not None:
                            # psql lexes a plain :variable's value as input (it may hold statements)
                            line = line[:j] + val + line[j + len(m.group(0)) :]
                            n = len(line)
                            continue
                if c == "(":
                    depth += 1
                elif c == ")":
                    depth = max(0, depth - 1)
                elif c == "\\":
                    # a meta-command: the rest of the line
                    rest = line[j + 1 :]
                    m = re.match(r"(\S*)(.*)$", rest)
                    cmd, args = m.group(1), m.group(2)
                    if buf.strip() and not buf.strip().startswith("--"):
                        # psql runs pending query text first only for \g-like commands; the
                        # files here put meta-commands on their own lines
                        pass
                    items.append(Item("meta", (cmd, meta_args(args, variables)), i))
                    run_meta_static(cmd, meta_args(args, variables), variables, env)
                    j = n
                    continue
                elif c == ";" and depth == 0 and begin_depth == 0:
                    buf += ";"
                    text = strip_leading_comments(buf)
                    buf = ""
                    idents = []
                    m = re.match(r"^\s*(set|reset)\s+(session\s+)?standard_conforming_strings\b\s*(=|to)?\s*'?(\w*)", text, re.I)
                    if m:
                        std_strings = m.group(1).lower() == "reset" or m.group(4).lower() in ("on", "true", "default")
                    if text.strip() != ";":
                        it = Item("sql", text, i)
                        items.append(it)
                        if COPY_STDIN.match(text):
                            data = []
                            k = i + 1
                            while k < len(lines) and lines[k] != "\\.":
                                data.append(lines[k])
                                data_lines.add(k)
                                k += 1
                            data_lines.add(k)
                            it.copy_data = data
                            # the rest of the COPY line is ignored; continue after "\."
                            i = k
                            j = n
                            break
                    j += 1
                    continue
                buf += c
                j += 1
            elif state == "'":
                buf += c
                if c == "'":
                    if j + 1 < n and line[j + 1] == "'":
                        buf += "'"
                        j += 2
                        continue
                    state = None
                elif c == "\\" and esc:
                    if j + 1 < n:
                        buf += line[j + 1]
                        j += 2
                        continue
                j += 1
            elif state == '"':
                buf += c
                if c == '"':
                    state = None
                j += 1
            elif state == "/*":
                if line.startswith("*/", j):
                    comment_depth -= 1
                    buf += "*/"
                    j += 2
                    if comment_depth == 0:
                        state = None
                    continue
                if line.startswith("/*", j):
                    comment_depth += 1
                    buf += "/*"
                    j += 2
                    continue
                buf += c
                j += 1
            else:  # dollar quote
                if line.startswith(state, j):
                    buf += state
                    j += len(state)
                    state = None
                    continue
                buf += c
                j += 1
        buf += "\n"
        i += 1
    return items, data_lines


def strip_leading_comments(text):
    out = text
    while True:
        s = out.lstrip()
        if s.startswith("--"):
            nl = s.find("\n")
            out = "" if nl < 0 else s[nl + 1 :]
            continue
        return s


def run_meta_static(cmd, args, variables, env):
    if cmd == "getenv" and len(args) >= 2:
        variables[args[0]] = env.get(args[1], "")
    elif cmd == "set" and args:
        variables[args[0]] = "".join(args[1:])


# ---------------------------------------------------------------------------------------------
# Reading psql's expected output


def disp_width(ch):
    if unicodedata.combining(ch):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def cut(line, start, width):
    """The characters of `line` in display columns [start, start+width), and the next char."""
    pos = 0
    out = []
    after = " "
    for ch in line:
        w = disp_width(ch)
        if pos >= start + width:
            after = ch
            break
        if pos >= start:
            out.append(ch)
        pos += w
    return "".join(out), after


DASHES = re.compile(r"^-+(\+-+)*$")
ROWS = re.compile(r"^\((\d+) rows?\)$")
MESSAGE = re.compile(r"^(ERROR|NOTICE|WARNING|INFO|DETAIL|HINT|CONTEXT|QUERY|LINE \d+|STATEMENT|LOCATION|psql):")


def parse_block(block):
    """psql's answers between two input lines: a list of ('table', header, rows) / ('error', msg)."""
    results = []
    i = 0
    while i < len(block):
        line = block[i]
        if i + 1 < len(block) and DASHES.match(block[i + 1]) and not MESSAGE.match(line):
            widths = [len(s) - 2 for s in block[i + 1].split("+")]
            starts = []
            pos = 0
            for w in widths:
                starts.append(pos + 1)
                pos += w + 3
            header = [cut(line, s, w)[0].strip() for s, w in zip(starts, widths)]
            rows = []
            k = i + 2
            cur = None
            while k < len(block) and not ROWS.match(block[k]):
                cells = []
                cont = False
                for s, w in zip(starts, widths):
                    text, after = cut(block[k], s, w)
                    cells.append(text.rstrip())
                    if after == "+":
                        cont = True
                if cur is None:
                    cur = cells
                else:
                    cur = [a + "\n" + b if (a_cont) else a for a, b, a_cont in zip(cur, cells, cur_cont)]
                cur_cont = [cut(block[k], s, w)[1] == "+" for s, w in zip(starts, widths)]
                if not cont:
                    rows.append([c.strip() for c in cur])
                    cur = None
                k += 1
            if cur is not None:
                rows.append([c.strip() for c in cur])
            results.append(("table", header, rows))
            i = k + 1
            continue
        if line == "--" and any(ROWS.match(b) for b in block[i + 1 :]):
            # a result with no columns: psql prints no header, the dashes, one empty line a row
            k = i + 1
            while not ROWS.match(block[k]):
                k += 1
            n = int(ROWS.match(block[k]).group(1))
            results.append(("table", [], [[] for _ in range(n)]))
            i = k + 1
            continue
        if line.startswith("ERROR:"):
            results.append(("error", line[len("ERROR:") :].strip()))
        i += 1
    return results


def align(lines, out_lines, items, data_lines):
    """Gives each item its expected answer block (the lines psql printed after it)."""
    echo = [k for k in range(len(lines)) if k not in data_lines]
    ends = {it.line for it in items}
    # position of each echoed input line in the .out
    pos = {}
    p = 0
    for idx, k in enumerate(echo):
        # search forward for this line with lookahead of the next input lines
        # (only up to the next line that runs something: its answer follows it)
        following = []
        for x in echo[idx : idx + 4]:
            following.append(lines[x])
            if x in ends:
                break
        q = p
        found = None
        while q < len(out_lines):
            if out_lines[q : q + len(following)] == following:
                found = q
                break
            q += 1
        if found is None:
            raise RuntimeError(f"expected output lost track at input line {k + 1}: {lines[k]!r}")
        pos[k] = found
        p = found + 1
    blocks = {}
    for idx, k in enumerate(echo):
        start = pos[k] + 1
        end = pos[echo[idx + 1]] if idx + 1 < len(echo) else len(out_lines)
        blocks[k] = out_lines[start:end]
    return blocks


# ---------------------------------------------------------------------------------------------
# Talking to the server (libpq through psycopg's pq module: raw text values)


class Conn:
    def __init__(self, conninfo, timeout):
        self.timeout = timeout
        self.conninfo = conninfo
        self.pg = None
        self.startup_settings = True
        opts = " ".join("-c %s=%s" % (k, v.replace(" ", "\\ ")) for k, v in SETTINGS)
        try:
            self.pg = connect(conninfo + b" options='" + opts.encode().replace(b"\\", b"\\\\") + b"'")
        except Exception:
            self.pg = None
        if self.pg is None:
            self.startup_settings = False
            self.pg = connect(conninfo)
            for k, v in SETTINGS:
                self.run("SET %s = '%s'" % (k, v))

    def close(self):
        if self.pg is not None:
            self.pg.finish()
            self.pg = None

    def alive(self):
        return self.pg is not None and self.pg.status == pq.ConnStatus.OK

    def run(self, sql, copy_data=None):
        """('rows', ncols, rows) | ('error', sqlstate, message) | ('none',)"""
        pg = self.pg
        try:
            pg.send_query(sql.encode())
        except Exception as e:
            return ("error", "08006", str(e).strip())
        outcome = None
        deadline = time.time() + self.timeout
        while True:
            while pg.is_busy():
                left = deadline - time.time()
                if left <= 0:
                    cancel(pg)
                    deadline = time.time() + 10
                    outcome = outcome or ("error", "TIMEOUT", "statement timed out in the runner")
                    continue
                r, _, _ = select.select([pg.socket], [], [], min(left, 1.0))
                pg.consume_input()
                if pg.status != pq.ConnStatus.OK:
                    return ("error", "08006", "connection lost")
            res = pg.get_result()
            if res is None:
                break
            st = res.status
            if st == pq.ExecStatus.COPY_IN:
                for line in copy_data or []:
                    pg.put_copy_data((line + "\n").encode())
                pg.put_copy_end()
                continue
            if st == pq.ExecStatus.COPY_OUT:
                while True:
                    n, _ = pg.get_copy_data(0)
                    if n < 0:
                        break
                continue
            if st == pq.ExecStatus.TUPLES_OK:
                rows = []
                for r in range(res.ntuples):
                    row = []
                    for c in range(res.nfields):
                        v = res.get_value(r, c)
                        row.append(None if v is None else v.decode(errors="replace"))
                    rows.append(row)
                header = [res.fname(c).decode(errors="replace") for c in range(res.nfields)]
                if outcome is None or outcome[0] == "none":
                    outcome = ("rows", header, rows)
            elif st == pq.ExecStatus.FATAL_ERROR:
                state = (res.error_field(pq.DiagnosticField.SQLSTATE) or b"").decode()
                msg = (res.error_field(pq.DiagnosticField.MESSAGE_PRIMARY) or b"").decode(errors="replace")
                if outcome is None or outcome[0] != "error" or outcome[1] == "TIMEOUT":
                    outcome = ("error", state, msg) if outcome is None or outcome[0] != "error" else outcome
            else:
                if outcome is None:
                    outcome = ("none",)
        return outcome or ("none",)


def connect(conninfo):
    pg = pq.PGconn.connect(conninfo)
    if pg.status != pq.ConnStatus.OK:
        msg = pg.error_message.decode(errors="replace")
        pg.finish()
        raise RuntimeError(msg)
    return pg


def cancel(pg):
    try:
        pg.get_cancel().cancel()
    except Exception:
        pass


# ---------------------------------------------------------------------------------------------
# Comparing


def cell_text(v):
    """A value as the expected-output parser reads it back (each line's trailing blanks cut)."""
    return "\n".join(part.rstrip() for part in v.split("\n")).strip()


def top_level(sql):
    """The statement's text outside parentheses, literals and comments (where an ORDER BY orders
    the result, not a window or an aggregate)."""
    out = []
    depth = 0
    i = 0
    n = len(sql)
    while i < n:
        c = sql[i]
        if c == "'" or c == '"':
            j = sql.find(c, i + 1)
            i = n if j < 0 else j + 1
            out.append(" ")
            continue
        if sql.startswith("--", i):
            j = sql.find("\n", i)
            i = n if j < 0 else j
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif depth == 0:
            out.append(c)
        i += 1
    return "".join(out)


HAS_ORDER = re.compile(r"\border\s+by\b", re.I)


def render(v, null):
    """A value as psql's aligned format shows it (control characters as \\xNN, tabs expanded)."""
    if v is None:
        return null
    if not any(ord(ch) < 32 or ord(ch) == 127 for ch in v):
        return v
    out = []
    col = 0
    for ch in v:
        if ch == "\n":
            out.append(ch)
            col = 0
        elif ch == "\t":
            k = 8 - col % 8
            out.append(" " * k)
            col += k
        elif ch == "\r":
            out.append("\\r")
            col += 2
        elif ord(ch) < 32 or ord(ch) == 127:
            out.append("\\x%02x" % ord(ch))
            col += 4
        else:
            out.append(ch)
            col += disp_width(ch)
    return "".join(out)


def matches(expected, got, sql, null):
    """expected: list of parsed results for this statement; got: the runner's outcome."""
    if got[0] == "error":
        exp_err = [e for e in expected if e[0] == "error"]
        if len(expected) == 1 and expected[0][0] == "error":
            return True, ("message" if expected[0][1] != got[2] else None)
        return False, None
    if got[0] == "rows":
        tables = [e for e in expected if e[0] == "table"]
        if len(expected) != 1 or len(tables) != 1:
            return False, None
        _, header, rows = tables[0]
        if len(header) != len(got[1]):
            return False, None
        mine = [[cell_text(render(v, null)) for v in row] for row in got[2]]
        if len(mine) != len(rows):
            return False, None
        if HAS_ORDER.search(top_level(sql)):
            return mine == rows, None
        return sorted(mine) == sorted(rows), None
    return len(expected) == 0, None


# ---------------------------------------------------------------------------------------------


def start_weir(binary, data_dir, log):
    proc = subprocess.Popen(
        [binary, "--listen", "127.0.0.1:0", "--data-dir", data_dir],
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
    )
    deadline = time.time() + 120
    while time.time() < deadline:
        line = proc.stdout.readline()
        if not line:
            if proc.poll() is not None:
                raise RuntimeError("weir exited at start")
            continue
        m = re.search(r"weir listening on (\S+):(\d+)", line)
        if m:
            return proc, m.group(1), int(m.group(2))
    raise RuntimeError("weir did not start")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="*")
    ap.add_argument("--pg", nargs="?", const=DEFAULT_PG)
    ap.add_argument("--url")
    ap.add_argument("--bin")
    ap.add_argument("--dir", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../shared/pg-regress"))
    ap.add_argument("--failures")
    ap.add_argument("--timeout", type=float, default=20)
    ap.add_argument("-v", action="store_true")
    args = ap.parse_args()
    regress_dir = os.path.abspath(args.dir)
    if not os.path.isdir(os.path.join(regress_dir, "sql")):
        regress_dir = "/work/shared/pg-regress"
    files = [f for f in ORDER if not args.files or f in args.files]

    proc = None
    data_dir = None
    drop_db = None
    admin = None
    if args.pg:
        admin = connect(to_conninfo(args.pg))
        name = "pgreg_%d" % os.getpid()
        admin.exec_(
            (
                "CREATE DATABASE %s TEMPLATE template0 ENCODING 'UTF8' LC_COLLATE 'C' LC_CTYPE 'C'" % name
            ).encode()
        )
        drop_db = name
        conninfo = to_conninfo(args.pg, dbname=name)
        target = "PostgreSQL (%s)" % args.pg
    elif args.url:
        conninfo = to_conninfo(args.url)
        target = args.url
    else:
        binary = args.bin or os.path.join(
            os.environ.get("CARGO_TARGET_DIR", os.path.join(os.path.dirname(__file__), "../target")), "debug/weir"
        )
        data_dir = tempfile.mkdtemp(prefix="weir-pgreg-")
        log = open(os.path.join(data_dir, "weir.log"), "w")
        proc, host, port = start_weir(binary, os.path.join(data_dir, "data"), log)
        conninfo = b"host=%s port=%d user=weir dbname=public" % (host.encode(), port)
        target = "weir (%s)" % binary

    env = {
        "PG_ABS_SRCDIR": regress_dir,
        "PG_LIBDIR": "/nonexistent",
        "PG_DLSUFFIX": ".so",
    }
    fails = open(args.failures, "w") if args.failures else None
    totals = [0, 0, 0, 0]  # passed, total, skipped (EXPLAIN/\d), error-message differences
    table = []
    try:
        for f in files:
            lines = open(os.path.join(regress_dir, "sql", f + ".sql"), encoding="utf-8").read().split("\n")
            if lines and lines[-1] == "":
                lines.pop()
            out_lines = open(os.path.join(regress_dir, "expected", f + ".out"), encoding="utf-8").read().split("\n")
            if out_lines and out_lines[-1] == "":
                out_lines.pop()
            variables = {}
            items, data_lines = split_file(lines, variables, env)
            blocks = align(lines, out_lines, items, data_lines)
            conn = Conn(conninfo, args.timeout)
            variables = {}
            null = ""
            passed = total = skipped = msgdiff = 0
            by_line = {}
            for it in items:
                by_line.setdefault(it.line, []).append(it)
            for line_no in sorted(by_line):
                group = by_line[line_no]
                expected = parse_block(blocks.get(line_no, []))
                stmts = [it for it in group if it.kind == "sql" or it.text[0] in ("d", "d+")]
                for it in group:
                    if it.kind == "meta" and it.text[0] == "pset" and len(it.text[1]) >= 2 and it.text[1][0] == "null":
                        null = it.text[1][1]
                if not stmts:
                    continue
                outcomes = []
                for it in stmts:
                    total += 1
                    if it.kind == "meta" or re.match(r"^\s*explain\b", it.text, re.I):
                        skipped += 1
                        outcomes.append(None)
                        continue
                    sql = it.text
                    copy_data = it.copy_data
                    m = COPY_FILE.match(sql)
                    if m and not COPY_STDIN.match(sql):
                        path = m.group(2)[1:-1].replace("''", "'")
                        sql = m.group(1) + "STDIN" + m.group(3)
                        copy_data = open(path, encoding="utf-8").read().split("\n")
                        if copy_data and copy_data[-1] == "":
                            copy_data.pop()
                    if not conn.alive():
                        conn.close()
                        if proc is not None and proc.poll() is not None:
                            proc, host, port = start_weir(binary, os.path.join(data_dir, "data"), log)
                            conninfo = b"host=%s port=%d user=weir dbname=public" % (host.encode(), port)
                        conn = Conn(conninfo, args.timeout)
                    try:
                        got = conn.run(sql, copy_data)
                    except Exception as e:  # the connection broke mid-statement
                        got = ("error", "08006", str(e))
                    outcomes.append((it, sql, got))
                real = [o for o in outcomes if o is not None]
                if len(stmts) == 1 or len(real) <= 1:
                    for o in real:
                        it, sql, got = o
                        exp = [e for e in expected]
                        ok, note = matches(exp, got, sql, null)
                        if ok:
                            passed += 1
                            if note == "message":
                                msgdiff += 1
                        report(fails, args.v, f, it, sql, exp, got, ok, note)
                else:
                    # several statements on one input line: psql prints their answers in turn
                    exp = list(expected)
                    for it, sql, got in real:
                        if got[0] == "none":
                            ok = True
                            mine = []
                        else:
                            mine = exp[:1]
                            exp = exp[1:]
                            ok, note = matches(mine, got, sql, null)
                        if ok:
                            passed += 1
                        report(fails, args.v, f, it, sql, mine, got, ok, None)
            conn.close()
            table.append((f, passed, total, skipped, msgdiff))
            totals[0] += passed
            totals[1] += total
            totals[2] += skipped
            totals[3] += msgdiff
            print("%-20s %5d / %5d" % (f, passed, total), flush=True)
    finally:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(20)
            except Exception:
                proc.kill()
            shutil.rmtree(data_dir, ignore_errors=True)
        if drop_db:
            admin.exec_(("DROP DATABASE IF EXISTS %s WITH (FORCE)" % drop_db).encode())
            admin.finish()
    print()
    print("target: %s" % target)
    print("%-20s %7s %7s %7s %7s" % ("file", "passed", "total", "skipped", "msgdiff"))
    for f, p, t, s, m in table:
        print("%-20s %7d %7d %7d %7d" % (f, p, t, s, m))
    print("%-20s %7d %7d %7d %7d" % ("TOTAL", *totals))
    print("skipped = EXPLAIN and \\d (never pass); msgdiff = passing errors whose message differs")


def report(fails, verbose, f, it, sql, exp, got, ok, note):
    if ok:
        return
    text = "=== %s:%d\n%s\n--- expected: %s\n--- got: %s\n" % (f, it.line + 1, sql.strip(), short(exp), short(got))
    if fails:
        fails.write(text)
    if verbose:
        sys.stdout.write(text)


def short(v):
    s = repr(v)
    return s if len(s) < 600 else s[:600] + "..."


def to_conninfo(url, dbname=None):
    """A postgres:// URL as libpq keyword conninfo (so options can be appended)."""
    from urllib.parse import urlparse

    u = urlparse(url)
    parts = {"host": u.hostname or "127.0.0.1", "port": str(u.port or 5432), "user": u.username or "postgres"}
    if u.password:
        parts["password"] = u.password
    parts["dbname"] = dbname or (u.path.lstrip("/") or "postgres")
    return " ".join("%s='%s'" % (k, v.replace("\\", "\\\\").replace("'", "\\'")) for k, v in parts.items()).encode()


if __name__ == "__main__":
    main()
