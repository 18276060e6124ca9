//! A grammar-based random SQL test (issue 6): a fixed seed, at least
//! 100,000 statements over a small time-series schema, through the
//! PostgreSQL protocol. Statements mix wrong arities, wrong types, huge
//! arguments, deep nesting, NULLs everywhere, casts between all types,
//! division by zero, overflow, aggregates, joins, GROUP BY / ORDER BY and
//! window functions.
//!
//! It checks that the connection answers after every statement, that no
//! answer is XX000 (an internal error: a bug), that every error carries a
//! proper SQLSTATE, and that the server is alive at the end. It prints the
//! statement count, the errors by SQLSTATE and the time.
//!
//! `WEIR_FUZZ_STATEMENTS=n` and `WEIR_FUZZ_SEED=s` change the run.

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::TestServer;
use tokio_postgres::SimpleQueryMessage;

/// splitmix64: a small, fixed, reproducible generator (no crate needed).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    /// True with probability `p` percent.
    fn pct(&mut self, p: usize) -> bool {
        self.below(100) < p
    }
    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.below(xs.len())]
    }
}

const SCHEMA: &[&str] = &[
    "CREATE TABLE cpu (host TEXT, region TEXT, ts TIMESTAMP TIME INDEX, usage DOUBLE PRECISION, load REAL, \
     mem BIGINT, n INTEGER, k SMALLINT, ok BOOLEAN, note TEXT, PRIMARY KEY (host, region))",
    "CREATE TABLE disk (ts TIMESTAMP TIME INDEX, host TEXT, used BIGINT, free DOUBLE PRECISION, dev TEXT, \
     PRIMARY KEY (host, dev))",
];

/// Columns by table, with a rough type class for picking them.
const CPU_COLS: &[(&str, char)] = &[
    ("host", 's'),
    ("region", 's'),
    ("ts", 't'),
    ("usage", 'f'),
    ("load", 'f'),
    ("mem", 'i'),
    ("n", 'i'),
    ("k", 'i'),
    ("ok", 'b'),
    ("note", 's'),
];
const DISK_COLS: &[(&str, char)] = &[("ts", 't'), ("host", 's'), ("used", 'i'), ("free", 'f'), ("dev", 's')];

const TYPES: &[&str] = &[
    "smallint",
    "integer",
    "int4",
    "bigint",
    "int8",
    "real",
    "float4",
    "double precision",
    "float8",
    "numeric",
    "text",
    "varchar",
    "boolean",
    "bool",
    "timestamp",
    "timestamptz",
    "date",
    "interval",
    "char",
    "bytea",
    "json",
];

const FUNCS: &[&str] = &[
    "abs",
    "sqrt",
    "cbrt",
    "exp",
    "ln",
    "log",
    "log10",
    "power",
    "round",
    "trunc",
    "floor",
    "ceil",
    "sign",
    "mod",
    "sin",
    "atan2",
    "degrees",
    "random",
    "pi",
    "length",
    "char_length",
    "octet_length",
    "lower",
    "upper",
    "initcap",
    "ascii",
    "chr",
    "reverse",
    "repeat",
    "lpad",
    "rpad",
    "trim",
    "btrim",
    "ltrim",
    "substr",
    "substring",
    "left",
    "right",
    "replace",
    "split_part",
    "strpos",
    "concat",
    "concat_ws",
    "quote_ident",
    "md5",
    "coalesce",
    "nullif",
    "greatest",
    "least",
    "now",
    "date_trunc",
    "date_part",
    "date_bin",
    "time_bucket",
    "extract",
    "to_char",
    "to_timestamp",
    "age",
    "current_setting",
    "version",
    "current_database",
    "pg_typeof",
    "format_type",
    "nosuchfunc",
];

const AGGS: &[&str] = &[
    "count",
    "sum",
    "avg",
    "min",
    "max",
    "string_agg",
    "bool_and",
    "bool_or",
    "stddev",
    "variance",
    "stddev_pop",
    "var_samp",
    "array_agg",
];

const WINDOW_FUNCS: &[&str] = &[
    "row_number()",
    "rank()",
    "dense_rank()",
    "percent_rank()",
    "ntile(3)",
    "lag(x)",
    "lead(x, 2)",
    "first_value(x)",
    "sum(x)",
    "count(*)",
    "avg(x)",
];

/// The usual argument count of each function in `FUNCS`.
fn arity(f: &str) -> usize {
    match f {
        "random" | "pi" | "now" | "version" | "current_database" => 0,
        "power" | "round" | "mod" | "atan2" | "repeat" | "lpad" | "rpad" | "left" | "right" | "strpos" | "nullif" | "concat"
        | "coalesce" | "greatest" | "least" | "date_trunc" | "date_part" | "time_bucket" | "to_char" | "age" | "format_type" => 2,
        "substr" | "substring" | "replace" | "split_part" | "concat_ws" | "date_bin" => 3,
        _ => 1,
    }
}

struct Gen {
    rng: Rng,
    depth: usize,
}

impl Gen {
    fn literal(&mut self) -> String {
        let r = &mut self.rng;
        match r.below(24) {
            0 => "NULL".into(),
            1 => r.pick(&["0", "1", "-1", "2", "7", "42", "-3"]).into(),
            2 => r.pick(&["2147483647", "-2147483648", "32767", "-32768", "2147483648"]).into(),
            3 => r.pick(&["9223372036854775807", "-9223372036854775808", "9223372036854775808", "99999999999999999999999"]).into(),
            4 => r.pick(&["0.0", "1.5", "-2.25", "1e308", "-1e308", "1e-320", "3.14159"]).into(),
            5 => r.pick(&["'NaN'::float8", "'Infinity'::float8", "'-Infinity'::float4", "'-0'::float8"]).into(),
            6 => r.pick(&["'abc'", "''", "'123'", "' 42 '", "'1.5'", "'true'", "'x''y'", "'ünï'", "'2024-01-01'", "'%_'"]).into(),
            7 => r.pick(&["TRUE", "FALSE", "NOT NULL", "'t'::bool", "'yes'::boolean"]).into(),
            8 => r
                .pick(&[
                    "TIMESTAMP '2024-01-31 12:00:00'",
                    "TIMESTAMP '1970-01-01'",
                    "'2024-02-29'::timestamp",
                    "'294276-12-31 23:59:59'::timestamp",
                    "'4714-11-24 BC'::timestamp",
                    "now()",
                    "'infinity'::timestamp",
                ])
                .into(),
            9 => r
                .pick(&["INTERVAL '1 day'", "INTERVAL '1 month'", "'-3 hours'::interval", "INTERVAL '1000000 years'", "'P1D'::interval"])
                .into(),
            10 => r.pick(&["DATE '2024-01-01'", "'0001-01-01'::date", "'2024-13-45'::date", "CURRENT_DATE"]).into(),
            11 => r.pick(&["NULL::int", "NULL::text", "NULL::timestamp", "NULL::float8", "NULL::boolean", "CAST(NULL AS bigint)"]).into(),
            12 => format!("{}", r.next() as i64 >> r.below(63)),
            13 => format!("{}.{}", (r.next() as i32) >> r.below(31), r.below(1000)),
            _ => r.pick(&["1", "2", "3", "'a'", "0", "NULL", "10", "'b'", "100"]).into(),
        }
    }

    fn column(&mut self, cols: &[(&str, char)]) -> String {
        if cols.is_empty() {
            return self.literal();
        }
        let c = cols[self.rng.below(cols.len())].0;
        c.to_string()
    }

    /// A huge argument: counts, lengths and ranges past every limit.
    fn huge(&mut self, cols: &[(&str, char)]) -> String {
        let count = self.rng.pick(&["2000000000", "10000000000000", "300000000", "1073741824", "-1", "2147483647", "9223372036854775807"]);
        match self.rng.below(9) {
            0 => format!("repeat('x', {count})"),
            1 => format!("length(repeat('xy', {count}))"),
            2 => format!("lpad('a', {count})"),
            3 => format!("rpad({}, {count}, 'ab')", self.column(cols)),
            4 => format!("repeat('abc', 400000000) || repeat('abc', 400000000)"),
            5 => format!("concat(repeat('x', 600000000), repeat('y', 600000000))"),
            6 => format!("(SELECT count(*) FROM (SELECT DISTINCT g FROM generate_series(1, {count}) g) s)"),
            7 => format!("(SELECT max(g) FROM (SELECT g FROM generate_series(1, {count}) g ORDER BY g DESC) s)"),
            _ => format!("(SELECT string_agg(repeat('z', 1000000), ',') FROM generate_series(1, 2000))"),
        }
    }

    fn expr(&mut self, cols: &[(&str, char)]) -> String {
        self.depth += 1;
        let e = if self.depth > 6 {
            self.leaf(cols)
        } else if self.rng.pct(55) {
            // Well-typed most of the time, so that statements get past the
            // binder and exercise the executor.
            let want = ['i', 'f', 's', 'b', 't'][self.rng.below(5)];
            self.typed(cols, want)
        } else {
            self.expr_inner(cols)
        };
        self.depth -= 1;
        e
    }

    /// A literal of a type class: i(nteger), f(loat), s(tring), b(oolean),
    /// t(imestamp).
    fn typed_literal(&mut self, want: char) -> String {
        let r = &mut self.rng;
        if r.pct(8) {
            return "NULL".into();
        }
        match want {
            'i' => r
                .pick(&["0", "1", "-1", "2", "3", "7", "10", "100", "-42", "2147483647", "-2147483648", "9223372036854775807", "32767"])
                .into(),
            'f' => {
                r.pick(&["0.0", "1.5", "-2.5", "3.25", "1e300", "-1e-300", "'NaN'::float8", "'Infinity'::float8", "0.1", "100.0"]).into()
            }
            's' => r.pick(&["'a'", "'abc'", "''", "'h1'", "'note 2'", "'x%'", "'%o%'", "'ünï'", "'12'", "'r1'"]).into(),
            'b' => r.pick(&["TRUE", "FALSE", "TRUE", "FALSE"]).into(),
            _ => r
                .pick(&[
                    "TIMESTAMP '2024-01-01 00:30:00'",
                    "TIMESTAMP '2024-01-01'",
                    "TIMESTAMP '1999-12-31 23:59:59'",
                    "now()",
                    "TIMESTAMP '2024-02-29 12:00:00'",
                ])
                .into(),
        }
    }

    fn typed_leaf(&mut self, cols: &[(&str, char)], want: char) -> String {
        let matching: Vec<&str> = cols.iter().filter(|c| c.1 == want).map(|c| c.0).collect();
        if !matching.is_empty() && self.rng.pct(65) {
            return matching[self.rng.below(matching.len())].to_string();
        }
        self.typed_literal(want)
    }

    fn typed(&mut self, cols: &[(&str, char)], want: char) -> String {
        self.depth += 1;
        let e = if self.depth > 6 || self.rng.pct(30) { self.typed_leaf(cols, want) } else { self.typed_inner(cols, want) };
        self.depth -= 1;
        e
    }

    fn typed_inner(&mut self, cols: &[(&str, char)], want: char) -> String {
        let k = self.rng.below(8);
        if k == 7 {
            let (c, t, e) = (self.typed(cols, 'b'), self.typed(cols, want), self.typed(cols, want));
            return format!("CASE WHEN {c} THEN {t} ELSE {e} END");
        }
        if k == 6 {
            return format!("COALESCE({}, {})", self.typed(cols, want), self.typed(cols, want));
        }
        match want {
            'i' => match k {
                0 | 1 => {
                    let op = self.rng.pick(&["+", "-", "*", "/", "%"]);
                    format!("({} {op} {})", self.typed(cols, 'i'), self.typed(cols, 'i'))
                }
                2 => format!("abs({})", self.typed(cols, 'i')),
                3 => format!("length({})", self.typed(cols, 's')),
                4 => format!(
                    "({})::{}",
                    {
                        let w = if self.rng.pct(50) { 'f' } else { 's' };
                        self.typed(cols, w)
                    },
                    self.rng.pick(&["int4", "int8", "int2"])
                ),
                _ => format!("(- {})", self.typed(cols, 'i')),
            },
            'f' => match k {
                0 | 1 => {
                    let op = self.rng.pick(&["+", "-", "*", "/"]);
                    format!("({} {op} {})", self.typed(cols, 'f'), {
                        let w = if self.rng.pct(50) { 'f' } else { 'i' };
                        self.typed(cols, w)
                    })
                }
                2 => format!(
                    "{}({})",
                    self.rng.pick(&["sqrt", "ln", "exp", "abs", "round", "floor", "ceil", "sin", "cbrt"]),
                    self.typed(cols, 'f')
                ),
                3 => format!("power({}, {})", self.typed(cols, 'f'), self.typed(cols, 'i')),
                4 => format!("({})::float8", {
                    let w = if self.rng.pct(50) { 'i' } else { 's' };
                    self.typed(cols, w)
                }),
                _ => format!("extract({} FROM {})", self.rng.pick(&["epoch", "hour", "year", "dow", "minute"]), self.typed(cols, 't')),
            },
            's' => match k {
                0 => format!("({} || {})", self.typed(cols, 's'), {
                    let w = if self.rng.pct(60) { 's' } else { 'i' };
                    self.typed(cols, w)
                }),
                1 => format!(
                    "{}({})",
                    self.rng.pick(&["upper", "lower", "initcap", "reverse", "md5", "btrim", "quote_ident"]),
                    self.typed(cols, 's')
                ),
                2 => format!("substr({}, {}, {})", self.typed(cols, 's'), self.typed(cols, 'i'), self.typed(cols, 'i')),
                3 => format!("replace({}, {}, {})", self.typed(cols, 's'), self.typed(cols, 's'), self.typed(cols, 's')),
                4 => format!(
                    "{}({}, {}, {})",
                    self.rng.pick(&["lpad", "rpad"]),
                    self.typed(cols, 's'),
                    self.rng.pick(&["0", "3", "10", "-2"]),
                    self.typed(cols, 's')
                ),
                _ => format!("({})::text", {
                    let w = ['i', 'f', 'b', 't'][self.rng.below(4)];
                    self.typed(cols, w)
                }),
            },
            'b' => match k {
                0 | 1 => {
                    let class = ['i', 'f', 's', 't'][self.rng.below(4)];
                    let op = self.rng.pick(&["=", "<>", "<", ">", "<=", ">=", "IS DISTINCT FROM"]);
                    format!("({} {op} {})", self.typed(cols, class), self.typed(cols, class))
                }
                2 => format!("({} {} {})", self.typed(cols, 'b'), self.rng.pick(&["AND", "OR"]), self.typed(cols, 'b')),
                3 => format!("({} {}LIKE {})", self.typed(cols, 's'), if self.rng.pct(30) { "NOT " } else { "" }, self.typed(cols, 's')),
                4 => format!(
                    "({} IS {}NULL)",
                    {
                        let w = ['i', 'f', 's', 't'][self.rng.below(4)];
                        self.typed(cols, w)
                    },
                    if self.rng.pct(50) { "NOT " } else { "" }
                ),
                _ => format!("({} IN ({}, {}))", self.typed(cols, 'i'), self.typed(cols, 'i'), self.typed(cols, 'i')),
            },
            _ => match k {
                0 | 1 => format!(
                    "({} {} {})",
                    self.typed(cols, 't'),
                    self.rng.pick(&["+", "-"]),
                    self.rng.pick(&["INTERVAL '1 hour'", "INTERVAL '1 month'", "INTERVAL '2 days'", "INTERVAL '-90 minutes'"])
                ),
                2 | 3 => format!(
                    "date_trunc('{}', {})",
                    self.rng.pick(&["minute", "hour", "day", "week", "month", "year"]),
                    self.typed(cols, 't')
                ),
                4 => format!(
                    "date_bin(INTERVAL '{}', {}, TIMESTAMP '2024-01-01')",
                    self.rng.pick(&["5 minutes", "1 hour", "1 day", "0 seconds"]),
                    self.typed(cols, 't')
                ),
                _ => format!("({})::timestamp", self.typed(cols, 's')),
            },
        }
    }

    fn leaf(&mut self, cols: &[(&str, char)]) -> String {
        if !cols.is_empty() && self.rng.pct(55) {
            self.column(cols)
        } else {
            self.literal()
        }
    }

    fn expr_inner(&mut self, cols: &[(&str, char)]) -> String {
        match self.rng.below(40) {
            0..=9 => self.leaf(cols),
            10..=15 => {
                let op = self.rng.pick(&[
                    "+",
                    "-",
                    "*",
                    "/",
                    "%",
                    "||",
                    "=",
                    "<>",
                    "<",
                    ">",
                    "<=",
                    ">=",
                    "AND",
                    "OR",
                    "IS DISTINCT FROM",
                    "IS NOT DISTINCT FROM",
                    "LIKE",
                    "ILIKE",
                    "NOT LIKE",
                    "^",
                    "~",
                    "#",
                    "&",
                    "|",
                    "<<",
                ]);
                format!("({} {op} {})", self.expr(cols), self.expr(cols))
            }
            16 => format!("(- {})", self.expr(cols)),
            17 => format!("(NOT {})", self.expr(cols)),
            18 => format!("({} IS {}NULL)", self.expr(cols), if self.rng.pct(50) { "NOT " } else { "" }),
            19..=21 => {
                let t = self.rng.pick(TYPES);
                if self.rng.pct(50) {
                    format!("CAST({} AS {t})", self.expr(cols))
                } else {
                    format!("({})::{t}", self.expr(cols))
                }
            }
            22..=26 => {
                let f = self.rng.pick(FUNCS);
                // Mostly the usual arity; 0..4 arguments otherwise, on
                // purpose: wrong arities must answer 42883.
                let n = if self.rng.pct(75) { arity(f) } else { self.rng.below(5) };
                let args: Vec<String> = (0..n).map(|_| self.expr(cols)).collect();
                match f {
                    "extract" => {
                        format!("extract({} FROM {})", self.rng.pick(&["year", "epoch", "dow", "hour", "nosuch"]), self.expr(cols))
                    }
                    "substring" if self.rng.pct(50) => {
                        format!("substring({} FROM {} FOR {})", self.expr(cols), self.expr(cols), self.expr(cols))
                    }
                    "date_trunc" | "date_part" if self.rng.pct(60) => {
                        format!(
                            "{f}('{}', {})",
                            self.rng.pick(&["hour", "day", "month", "year", "week", "bogus", "minute"]),
                            self.expr(cols)
                        )
                    }
                    _ => format!("{f}({})", args.join(", ")),
                }
            }
            27..=28 => {
                let n = 1 + self.rng.below(3);
                let mut s = String::from("CASE");
                if self.rng.pct(30) {
                    s.push(' ');
                    s.push_str(&self.expr(cols));
                }
                for _ in 0..n {
                    s.push_str(&format!(" WHEN {} THEN {}", self.expr(cols), self.expr(cols)));
                }
                if self.rng.pct(60) {
                    s.push_str(&format!(" ELSE {}", self.expr(cols)));
                }
                s.push_str(" END");
                s
            }
            29 => format!("({} BETWEEN {} AND {})", self.expr(cols), self.expr(cols), self.expr(cols)),
            30 => {
                let n = 1 + self.rng.below(4);
                let items: Vec<String> = (0..n).map(|_| self.expr(cols)).collect();
                format!("({} {}IN ({}))", self.expr(cols), if self.rng.pct(30) { "NOT " } else { "" }, items.join(", "))
            }
            31 => {
                let (t, tc) = self.table();
                format!("(SELECT {} FROM {t} {})", self.expr(tc), if self.rng.pct(50) { "LIMIT 1" } else { "" })
            }
            32 => {
                let (t, tc) = self.table();
                format!("{}EXISTS (SELECT 1 FROM {t} WHERE {})", if self.rng.pct(30) { "NOT " } else { "" }, self.expr(tc))
            }
            33 => {
                let (t, tc) = self.table();
                format!("({} IN (SELECT {} FROM {t}))", self.expr(cols), self.column(tc))
            }
            34 => self.huge(cols),
            35 => format!("COALESCE({}, {})", self.expr(cols), self.expr(cols)),
            36 => format!("NULLIF({}, {})", self.expr(cols), self.expr(cols)),
            37 => format!("({} / 0)", self.expr(cols)),
            38 => format!("({} * 9223372036854775807)", self.expr(cols)),
            _ => format!("(({}))", self.expr(cols)),
        }
    }

    fn table(&mut self) -> (&'static str, &'static [(&'static str, char)]) {
        if self.rng.pct(60) {
            ("cpu", CPU_COLS)
        } else {
            ("disk", DISK_COLS)
        }
    }

    fn agg(&mut self, cols: &[(&str, char)]) -> String {
        let a = self.rng.pick(AGGS);
        let distinct = if self.rng.pct(15) { "DISTINCT " } else { "" };
        match (a, self.rng.below(6)) {
            ("count", 0) => "count(*)".into(),
            ("string_agg", _) => format!("string_agg({distinct}{}, {})", self.expr(cols), self.rng.pick(&["','", "NULL", "''", "1"])),
            (_, 1) => format!("{a}()"),
            (_, 2) => format!("{a}({}, {})", self.expr(cols), self.expr(cols)),
            (_, 3) => format!("{a}({}) FILTER (WHERE {})", self.expr(cols), self.expr(cols)),
            _ => format!("{a}({distinct}{})", self.expr(cols)),
        }
    }

    fn window(&mut self, cols: &[(&str, char)]) -> String {
        let f = self.rng.pick(WINDOW_FUNCS).replace('x', &self.column(cols));
        let mut over = String::new();
        if self.rng.pct(60) {
            over.push_str(&format!("PARTITION BY {}", self.column(cols)));
        }
        if self.rng.pct(70) {
            over.push_str(&format!(" ORDER BY {}{}", self.expr(cols), if self.rng.pct(40) { " DESC" } else { "" }));
        }
        format!("{f} OVER ({over})")
    }

    /// A FROM clause and the columns it provides.
    fn from(&mut self) -> (String, Vec<(&'static str, char)>) {
        match self.rng.below(10) {
            0..=4 => {
                let (t, c) = self.table();
                (t.into(), c.to_vec())
            }
            5 => {
                let kind = self.rng.pick(&["JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL JOIN", "INNER JOIN"]);
                let on = self.rng.pick(&[
                    "cpu.host = disk.host",
                    "cpu.ts = disk.ts",
                    "cpu.n = disk.used",
                    "TRUE",
                    "cpu.usage > disk.free",
                    "NULL",
                ]);
                let mut cols: Vec<(&str, char)> = vec![
                    ("cpu.host", 's'),
                    ("disk.host", 's'),
                    ("usage", 'f'),
                    ("used", 'i'),
                    ("cpu.ts", 't'),
                    ("dev", 's'),
                    ("n", 'i'),
                    ("note", 's'),
                ];
                if self.rng.pct(20) {
                    cols.push(("ts", 't')); // ambiguous: 42702
                }
                (format!("cpu {kind} disk ON {on}"), cols)
            }
            6 => ("cpu CROSS JOIN disk".into(), vec![("usage", 'f'), ("used", 'i'), ("note", 's'), ("dev", 's'), ("mem", 'i')]),
            7 => {
                let count = self.rng.pick(&["10", "1000", "0", "-5", "3000", "NULL"]);
                (format!("generate_series(1, {count}) AS g(x)"), vec![("x", 'i')])
            }
            8 => {
                let (t, c) = self.table();
                let e = self.expr(c);
                (format!("(SELECT {e} AS x, {} AS y FROM {t}) AS s", self.column(c)), vec![("x", '?'), ("y", '?')])
            }
            _ => ("(VALUES (1, 'a'), (NULL, 'b'), (3, NULL)) AS v(x, y)".into(), vec![("x", 'i'), ("y", 's')]),
        }
    }

    fn select(&mut self) -> String {
        let (from, cols) = if self.rng.pct(15) { (String::new(), vec![]) } else { self.from() };
        let grouped = !cols.is_empty() && self.rng.pct(30);
        let mut items = Vec::new();
        let n = 1 + self.rng.below(3);
        let group_col = if grouped { Some(self.column(&cols)) } else { None };
        for _ in 0..n {
            let item = match (&group_col, self.rng.below(10)) {
                (Some(g), 0..=3) => g.clone(),
                (Some(_), _) => self.agg(&cols),
                (None, 0) if !cols.is_empty() => self.agg(&cols),
                (None, 1) if !cols.is_empty() => self.window(&cols),
                (None, 2) if !cols.is_empty() => "*".into(),
                _ => self.expr(&cols),
            };
            items.push(item);
        }
        let distinct = if self.rng.pct(8) { "DISTINCT " } else { "" };
        let mut sql = format!("SELECT {distinct}{}", items.join(", "));
        if !from.is_empty() {
            sql.push_str(" FROM ");
            sql.push_str(&from);
        }
        if !cols.is_empty() && self.rng.pct(40) {
            sql.push_str(&format!(" WHERE {}", self.expr(&cols)));
        }
        if let Some(g) = &group_col {
            sql.push_str(&format!(" GROUP BY {g}"));
            if self.rng.pct(30) {
                sql.push_str(&format!(" HAVING {}", self.agg(&cols)));
            }
        }
        if self.rng.pct(35) {
            let key = match self.rng.below(4) {
                0 => format!("{}", 1 + self.rng.below(4)),
                1 if !cols.is_empty() => self.column(&cols),
                _ => self.expr(&cols),
            };
            sql.push_str(&format!(" ORDER BY {key}{}", self.rng.pick(&["", " DESC", " NULLS FIRST", " ASC NULLS LAST"])));
        }
        if self.rng.pct(20) {
            sql.push_str(&format!(
                " LIMIT {}",
                self.rng.pick(&["0", "1", "5", "9223372036854775807", "-1", "NULL", "ALL", "99999999999999999999"])
            ));
        }
        if self.rng.pct(8) {
            sql.push_str(&format!(" OFFSET {}", self.rng.pick(&["0", "2", "9223372036854775807", "-1", "NULL"])));
        }
        sql
    }

    /// Very deep nesting: parentheses, CASE, subqueries, function calls.
    fn deep(&mut self) -> String {
        let n = *[50usize, 500, 3000, 20000].get(self.rng.below(4)).unwrap();
        match self.rng.below(5) {
            0 => format!("SELECT {}1{}", "(".repeat(n), ")".repeat(n)),
            1 => format!("SELECT {}1{}", "CASE WHEN TRUE THEN ".repeat(n), " END".repeat(n)),
            2 => format!("SELECT {}1{}", "(SELECT ".repeat(n.min(3000)), ")".repeat(n.min(3000))),
            3 => format!("SELECT {}1{}", "abs(".repeat(n), ")".repeat(n)),
            _ => format!("SELECT 1{}", " + 1".repeat(n)),
        }
    }

    fn dml(&mut self) -> String {
        match self.rng.below(4) {
            0 | 1 => {
                let vals: Vec<String> = (0..8).map(|_| self.literal()).collect();
                format!(
                    "INSERT INTO cpu (host, region, ts, usage, load, mem, n, k, ok, note) VALUES ('h{}', 'r{}', {})",
                    self.rng.below(5),
                    self.rng.below(3),
                    vals.join(", ")
                )
            }
            2 => {
                let vals: Vec<String> = (0..3).map(|_| self.literal()).collect();
                format!("INSERT INTO disk (ts, host, used, free, dev) VALUES ({}, 'h{}', 'sda')", vals.join(", "), self.rng.below(5))
            }
            _ => format!("UPDATE disk SET free = {} WHERE {}", self.expr(DISK_COLS), self.expr(DISK_COLS)),
        }
    }

    fn statement(&mut self) -> String {
        match self.rng.below(1000) {
            0..=4 => self.deep(),
            5..=9 => self.dml(),
            10..=39 => {
                let op = self.rng.pick(&["UNION", "UNION ALL", "INTERSECT", "EXCEPT", "EXCEPT ALL"]);
                format!("{} {op} {}", self.select(), self.select())
            }
            40..=49 => format!("SELECT {}", self.huge(&[])),
            _ => self.select(),
        }
    }
}

fn seed_rows() -> Vec<String> {
    let mut out = Vec::new();
    let mut r = Rng(7);
    for i in 0..40 {
        let mut null = |v: String| if r.pct(15) { "NULL".to_string() } else { v };
        let vals: Vec<u64> = (0..7).map(|k| (i as u64 * 2654435761 + k * 97) % 1000).collect();
        let usage = null(format!("{}.{}", vals[0] % 100, vals[1] % 100));
        let load = null(format!("{}", vals[2] % 8));
        let mem = null(format!("{}", (vals[3] as i64) * 1_000_003 * if i % 7 == 0 { -1 } else { 1 }));
        let n = null(format!("{}", (vals[4] % 200) as i64 - 100));
        let k = null(format!("{}", vals[5] % 30));
        let ok = null(if vals[6] % 2 == 0 { "true".into() } else { "false".into() });
        let note = null(format!("'note {}'", vals[0] % 5));
        out.push(format!(
            "INSERT INTO cpu (host, region, ts, usage, load, mem, n, k, ok, note) VALUES ('h{}', 'r{}', TIMESTAMP '2024-01-01 00:00:00' + INTERVAL '{} minutes', {usage}, {load}, {mem}, {n}, {k}, {ok}, {note})",
            i % 5,
            i % 3,
            i * 7
        ));
    }
    for i in 0..20 {
        let used = if i % 6 == 0 { "NULL".to_string() } else { format!("{}", i * 1000 - 3000) };
        out.push(format!(
            "INSERT INTO disk (ts, host, used, free, dev) VALUES (TIMESTAMP '2024-01-01 00:00:00' + INTERVAL '{} minutes', 'h{}', {used}, {}, 'sd{}')",
            i * 11,
            i % 4,
            if i % 5 == 0 { "NULL".to_string() } else { format!("{}.5", i) },
            i % 3
        ));
    }
    out
}

/// What one connection's stream of statements saw.
#[derive(Default)]
struct Outcome {
    ok: usize,
    by_state: BTreeMap<String, usize>,
    internal: Vec<(String, String)>,
    slowest: Vec<(Duration, String)>,
    /// A statement after which the connection was lost or unusable.
    lost: Option<String>,
}

/// Run `n` generated statements on `c`, each followed by a pipelined
/// `SELECT 1` probe (one round trip; the connection is shown to work after
/// every statement).
async fn run_stream(c: tokio_postgres::Client, seed: u64, n: usize) -> Outcome {
    // Limits that make huge requests fail fast instead of running long.
    c.batch_execute("SET weir.query_memory_bytes_max = 2097152").await.unwrap();
    c.batch_execute("SET statement_timeout = '2s'").await.unwrap();
    let mut g = Gen { rng: Rng(seed), depth: 0 };
    let mut out = Outcome::default();
    // Statements go out PIPELINE at a time, each followed by its probe, so
    // the wait for the network overlaps the server's work.
    const PIPELINE: usize = 4;
    let mut i = 0;
    while i < n {
        let batch: Vec<String> = (0..PIPELINE.min(n - i)).map(|_| g.statement()).collect();
        let t0 = Instant::now();
        // Queued in order on the wire: statement, probe, statement, probe…
        let queries = batch.iter().flat_map(|sql| [sql.as_str(), "SELECT 1"]).map(|q| {
            let c = &c;
            async move {
                let r = c.simple_query(q).await;
                (r, t0.elapsed())
            }
        });
        let mut answers = futures::future::join_all(queries).await.into_iter();
        let mut prev = Duration::ZERO;
        for sql in &batch {
            let (r, at) = answers.next().unwrap();
            let (probe, _) = answers.next().unwrap();
            let took = at.saturating_sub(prev);
            prev = at;
            i += 1;
            let short = |k: usize| sql.chars().take(k).collect::<String>();
            if out.slowest.len() < 6 || took > out.slowest[out.slowest.len() - 1].0 {
                out.slowest.push((took, short(300)));
                out.slowest.sort_by(|a, b| b.0.cmp(&a.0));
                out.slowest.truncate(6);
            }
            match r {
                Ok(msgs) => {
                    out.ok += 1;
                    assert!(msgs.iter().any(|m| matches!(m, SimpleQueryMessage::CommandComplete(_))), "no CommandComplete for {sql}");
                }
                Err(e) => {
                    let Some(db) = e.as_db_error() else {
                        out.lost = Some(format!("statement {i} (seed {seed:#x}) lost the connection: {e}\n{}", short(2000)));
                        return out;
                    };
                    let code = db.code().code().to_string();
                    assert!(
                        code.len() == 5 && code.chars().all(|ch| ch.is_ascii_digit() || ch.is_ascii_uppercase()),
                        "bad SQLSTATE {code:?} for {sql}"
                    );
                    assert_eq!(db.severity(), "ERROR", "{sql}: {}", db.message());
                    if code == "XX000" {
                        out.internal.push((short(500), db.message().to_string()));
                    }
                    *out.by_state.entry(code).or_default() += 1;
                }
            }
            if let Err(e) = probe {
                out.lost = Some(format!("connection unusable after statement {i} (seed {seed:#x}): {e}\n{}", short(2000)));
                return out;
            }
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_sql_never_crashes_or_answers_xx000() {
    let statements: usize = std::env::var("WEIR_FUZZ_STATEMENTS").ok().and_then(|s| s.parse().ok()).unwrap_or(100_000);
    let seed: u64 = std::env::var("WEIR_FUZZ_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5EED_0006);
    let mut server = TestServer::start().unwrap();
    assert!(!server.is_external(), "the random SQL test sets weir's own memory budget; run it against weir");
    let c = server.connect(None).await.unwrap();
    c.batch_execute("DROP TABLE IF EXISTS cpu; DROP TABLE IF EXISTS disk").await.ok();
    for s in SCHEMA.iter().map(|s| s.to_string()).chain(seed_rows()) {
        c.batch_execute(&s).await.unwrap_or_else(|e| panic!("setup {s}: {e}"));
    }

    // Four connections, each with its own fixed seed (seed + k): sessions
    // run side by side as they do in production, and the server's cores
    // stay busy.
    const STREAMS: usize = 4;
    let started = Instant::now();
    let mut handles = Vec::new();
    let mut first = Some(c);
    for k in 0..STREAMS {
        let conn = match first.take() {
            Some(c) => c,
            None => server.connect(None).await.unwrap(),
        };
        let n = statements / STREAMS + usize::from(k < statements % STREAMS);
        handles.push(tokio::spawn(run_stream(conn, seed + k as u64, n)));
    }
    let mut outcomes = Vec::new();
    for h in handles {
        outcomes.push(h.await.unwrap());
    }
    let elapsed = started.elapsed();
    for o in &outcomes {
        if let Some(lost) = &o.lost {
            panic!("{lost}\n{}", server.log_tail());
        }
    }
    // The server is alive and still answers a new connection.
    let c3 = server.connect(None).await.expect("the server accepts connections at the end");
    let n: i64 = c3.query_one("SELECT count(*) FROM cpu", &[]).await.unwrap().get(0);
    assert!(n >= 40);
    assert!(server.exited().is_none(), "weir exited");

    let mut by_state: BTreeMap<String, usize> = BTreeMap::new();
    for o in &outcomes {
        for (k, v) in &o.by_state {
            *by_state.entry(k.clone()).or_default() += v;
        }
    }
    let errors: usize = by_state.values().sum();
    let ok: usize = outcomes.iter().map(|o| o.ok).sum();
    println!(
        "sql_fuzz: {statements} statements on {STREAMS} connections (seeds {seed:#x} + 0..{STREAMS}) in {:.1} s: {ok} ok, {errors} errors",
        elapsed.as_secs_f64()
    );
    for (code, n) in &by_state {
        println!("sql_fuzz:   {code}  {n}");
    }
    for (took, sql) in outcomes.iter().flat_map(|o| &o.slowest) {
        println!("sql_fuzz: slow {:.0} ms: {sql}", took.as_secs_f64() * 1000.0);
    }
    let internal: Vec<_> = outcomes.iter().flat_map(|o| &o.internal).collect();
    for (sql, msg) in internal.iter().take(40) {
        println!("sql_fuzz: XX000 {msg}\n    {sql}");
    }
    assert!(internal.is_empty(), "{} statements answered XX000 (internal error); see the list above", internal.len());
}
