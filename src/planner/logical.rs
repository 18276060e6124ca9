//! The logical plan: typed relational nodes with output schemas, built by
//! the binder (`select.rs`) from sqlparser's AST, rewritten by the passes
//! in `rewrite/`, and turned into exec's operators by `physical.rs`.
//!
//! Expressions are exec's bound, position-based `Expr`: they compare and
//! hash structurally. Aggregate and window calls are first-class values of
//! their `Aggregate` / `Window` nodes; a subquery expression holds its own
//! logical plan until physical planning.
//!
//! Owns only plan descriptions: no execution, no catalog access. May import
//! `exec::expr` / `exec::plan` (expressions and the shared enums),
//! `storage` (region handles of a scan), `catalog`, `types`, `error`.

use std::fmt::Write as _;

use arrow::array::RecordBatch;

use crate::catalog::TableDef;
use crate::exec::expr::{Expr, SubPlan, SubqueryPlan};
use crate::exec::plan::{AggCall, JoinKind, PlanColumn, Regions, SetOpKind, SortKey, SrfCall, WindowCall};
use crate::types::Value;

/// A scan of a table's regions, with what was pushed into it.
///
/// `filters`, `time_range` and `tag_sets` address the table's columns (not
/// the projected output). The filters are the conjuncts the scan's rows
/// must satisfy; `time_range` and `tag_sets` are implied by them and let
/// storage skip files and row groups.
#[derive(Debug, Clone)]
pub struct Scan {
    pub table: TableDef,
    pub regions: Regions,
    /// Table column indices read, in output order (None = all).
    pub projection: Option<Vec<usize>>,
    /// Output columns (after the projection).
    pub columns: Vec<PlanColumn>,
    pub filters: Vec<Expr>,
    /// [lo, hi) over the time index, in microseconds.
    pub time_range: Option<(i64, i64)>,
    /// Primary-key column ∈ set of values, from `=` and `IN (..)` filters
    /// (several on one column intersect; an empty set matches no row).
    pub tag_sets: Vec<(usize, Vec<Value>)>,
    /// Only each series' last row is needed (see `rewrite/last_row.rs`).
    pub last_row: bool,
}

impl Scan {
    /// The table column index of output column `i`.
    pub fn table_column(&self, i: usize) -> usize {
        match &self.projection {
            Some(p) => p[i],
            None => i,
        }
    }

    /// All table columns, as the scan's columns before any projection.
    pub fn table_columns(&self) -> Vec<PlanColumn> {
        let qual = self.columns.first().and_then(|c| c.qualifier.clone());
        self.table.columns.iter().map(|c| PlanColumn { name: c.name.clone(), qualifier: qual.clone(), ty: c.ty }).collect()
    }
}

/// A logical plan node. Every node has an output schema (`columns()`);
/// expressions refer to the input's columns by position (a join's to the
/// left columns, then the right ones).
#[derive(Debug, Clone)]
pub enum LogicalPlan {
    Scan(Scan),
    /// Rows computed at plan time: system tables, catalogs.
    Memory {
        name: String,
        batches: Vec<RecordBatch>,
        columns: Vec<PlanColumn>,
    },
    /// VALUES rows (an empty row list of width 0 is the FROM-less SELECT).
    Values {
        rows: Vec<Vec<Expr>>,
        columns: Vec<PlanColumn>,
    },
    /// generate_series(start, stop[, step]).
    Series {
        args: Vec<Expr>,
        columns: Vec<PlanColumn>,
    },
    Filter {
        input: Box<LogicalPlan>,
        predicate: Expr,
    },
    Project {
        input: Box<LogicalPlan>,
        exprs: Vec<Expr>,
        columns: Vec<PlanColumn>,
    },
    /// Set-returning functions of a select list. Output: the input's
    /// columns, then each call's columns; one row's calls advance in
    /// lockstep (shorter sets padded with NULL), as PostgreSQL's ProjectSet.
    ProjectSet {
        input: Box<LogicalPlan>,
        srfs: Vec<SrfCall>,
        columns: Vec<PlanColumn>,
    },
    /// Output: the group keys, then one column per aggregate call.
    Aggregate {
        input: Box<LogicalPlan>,
        group_by: Vec<Expr>,
        aggs: Vec<AggCall>,
        columns: Vec<PlanColumn>,
    },
    /// Output: the input's columns, then one column per window call.
    Window {
        input: Box<LogicalPlan>,
        calls: Vec<WindowCall>,
        columns: Vec<PlanColumn>,
    },
    /// `on`: equalities (left expression over the left input, right over
    /// the right input); `filter`: the rest, over the joined row. Semi and
    /// anti joins output the left columns only.
    Join {
        left: Box<LogicalPlan>,
        right: Box<LogicalPlan>,
        kind: JoinKind,
        on: Vec<(Expr, Expr)>,
        filter: Option<Expr>,
        columns: Vec<PlanColumn>,
    },
    /// `fetch`: only the first rows are needed (a LIMIT above).
    Sort {
        input: Box<LogicalPlan>,
        keys: Vec<SortKey>,
        fetch: Option<usize>,
    },
    Limit {
        input: Box<LogicalPlan>,
        limit: Option<usize>,
        offset: usize,
    },
    Distinct {
        input: Box<LogicalPlan>,
    },
    /// The first row of each key, in input order.
    DistinctOn {
        input: Box<LogicalPlan>,
        keys: Vec<Expr>,
    },
    SetOp {
        left: Box<LogicalPlan>,
        right: Box<LogicalPlan>,
        kind: SetOpKind,
        all: bool,
    },
    /// A WITH RECURSIVE query: the anchor's rows, then the recursive term
    /// run again and again over the rows the previous run added (its
    /// `WorkTable` of the same `id`) until a run adds none. `all: false`
    /// (UNION) drops rows already produced. Output columns: the anchor's
    /// types, the CTE's names.
    RecursiveUnion {
        anchor: Box<LogicalPlan>,
        recursive: Box<LogicalPlan>,
        id: usize,
        all: bool,
        columns: Vec<PlanColumn>,
    },
    /// The rows the previous iteration of the `RecursiveUnion` `id` added.
    WorkTable {
        id: usize,
        columns: Vec<PlanColumn>,
    },
}

impl LogicalPlan {
    /// The output schema.
    pub fn columns(&self) -> &[PlanColumn] {
        match self {
            LogicalPlan::Scan(s) => &s.columns,
            LogicalPlan::Memory { columns, .. }
            | LogicalPlan::Values { columns, .. }
            | LogicalPlan::Series { columns, .. }
            | LogicalPlan::Project { columns, .. }
            | LogicalPlan::ProjectSet { columns, .. }
            | LogicalPlan::Aggregate { columns, .. }
            | LogicalPlan::Window { columns, .. }
            | LogicalPlan::Join { columns, .. }
            | LogicalPlan::RecursiveUnion { columns, .. }
            | LogicalPlan::WorkTable { columns, .. } => columns,
            LogicalPlan::Filter { input, .. }
            | LogicalPlan::Sort { input, .. }
            | LogicalPlan::Limit { input, .. }
            | LogicalPlan::Distinct { input }
            | LogicalPlan::DistinctOn { input, .. } => input.columns(),
            LogicalPlan::SetOp { left, .. } => left.columns(),
        }
    }

    /// The node's inputs.
    pub fn inputs(&self) -> Vec<&LogicalPlan> {
        match self {
            LogicalPlan::Scan(_)
            | LogicalPlan::Memory { .. }
            | LogicalPlan::Values { .. }
            | LogicalPlan::Series { .. }
            | LogicalPlan::WorkTable { .. } => vec![],
            LogicalPlan::Filter { input, .. }
            | LogicalPlan::Project { input, .. }
            | LogicalPlan::ProjectSet { input, .. }
            | LogicalPlan::Aggregate { input, .. }
            | LogicalPlan::Window { input, .. }
            | LogicalPlan::Sort { input, .. }
            | LogicalPlan::Limit { input, .. }
            | LogicalPlan::Distinct { input }
            | LogicalPlan::DistinctOn { input, .. } => vec![input],
            LogicalPlan::Join { left, right, .. } | LogicalPlan::SetOp { left, right, .. } => vec![left, right],
            LogicalPlan::RecursiveUnion { anchor, recursive, .. } => vec![anchor, recursive],
        }
    }

    /// The node's inputs, mutably (the same order as `inputs`).
    pub fn inputs_mut(&mut self) -> Vec<&mut LogicalPlan> {
        match self {
            LogicalPlan::Scan(_)
            | LogicalPlan::Memory { .. }
            | LogicalPlan::Values { .. }
            | LogicalPlan::Series { .. }
            | LogicalPlan::WorkTable { .. } => vec![],
            LogicalPlan::Filter { input, .. }
            | LogicalPlan::Project { input, .. }
            | LogicalPlan::ProjectSet { input, .. }
            | LogicalPlan::Aggregate { input, .. }
            | LogicalPlan::Window { input, .. }
            | LogicalPlan::Sort { input, .. }
            | LogicalPlan::Limit { input, .. }
            | LogicalPlan::Distinct { input }
            | LogicalPlan::DistinctOn { input, .. } => vec![input],
            LogicalPlan::Join { left, right, .. } | LogicalPlan::SetOp { left, right, .. } => vec![left, right],
            LogicalPlan::RecursiveUnion { anchor, recursive, .. } => vec![anchor, recursive],
        }
    }

    /// The expressions of this node (not of its inputs), by reference.
    pub fn exprs(&self) -> Vec<&Expr> {
        let mut v: Vec<&Expr> = Vec::new();
        match self {
            LogicalPlan::Scan(s) => v.extend(s.filters.iter()),
            LogicalPlan::Memory { .. }
            | LogicalPlan::Distinct { .. }
            | LogicalPlan::Limit { .. }
            | LogicalPlan::SetOp { .. }
            | LogicalPlan::RecursiveUnion { .. }
            | LogicalPlan::WorkTable { .. } => {}
            LogicalPlan::Values { rows, .. } => rows.iter().for_each(|r| v.extend(r.iter())),
            LogicalPlan::Series { args, .. } => v.extend(args.iter()),
            LogicalPlan::Filter { predicate, .. } => v.push(predicate),
            LogicalPlan::Project { exprs, .. } => v.extend(exprs.iter()),
            LogicalPlan::ProjectSet { srfs, .. } => srfs.iter().for_each(|c| v.extend(c.args.iter())),
            LogicalPlan::Aggregate { group_by, aggs, .. } => {
                v.extend(group_by.iter());
                for a in aggs {
                    v.extend(a.args.iter());
                    v.extend(a.filter.iter());
                }
            }
            LogicalPlan::Window { calls, .. } => {
                for c in calls {
                    v.extend(c.args.iter());
                    v.extend(c.partition_by.iter());
                    v.extend(c.order_by.iter().map(|k| &k.expr));
                    v.extend(c.frame.exprs());
                }
            }
            LogicalPlan::Join { on, filter, .. } => {
                for (l, r) in on {
                    v.push(l);
                    v.push(r);
                }
                v.extend(filter.iter());
            }
            LogicalPlan::Sort { keys, .. } => v.extend(keys.iter().map(|k| &k.expr)),
            LogicalPlan::DistinctOn { keys, .. } => v.extend(keys.iter()),
        }
        v
    }

    /// Apply `f` to every expression of this node and its inputs,
    /// including plans nested in subquery expressions (with depth + 1).
    pub fn map_exprs(&self, depth: usize, f: &dyn Fn(&Expr, usize) -> Option<Expr>) -> LogicalPlan {
        let m = |e: &Expr| e.map(depth, f);
        let mp = |p: &LogicalPlan| Box::new(p.map_exprs(depth, f));
        match self {
            LogicalPlan::Scan(s) => LogicalPlan::Scan(Scan { filters: s.filters.iter().map(m).collect(), ..s.clone() }),
            LogicalPlan::Memory { .. } | LogicalPlan::WorkTable { .. } => self.clone(),
            LogicalPlan::Values { rows, columns } => {
                LogicalPlan::Values { rows: rows.iter().map(|r| r.iter().map(m).collect()).collect(), columns: columns.clone() }
            }
            LogicalPlan::Series { args, columns } => LogicalPlan::Series { args: args.iter().map(m).collect(), columns: columns.clone() },
            LogicalPlan::Filter { input, predicate } => LogicalPlan::Filter { input: mp(input), predicate: m(predicate) },
            LogicalPlan::Project { input, exprs, columns } => {
                LogicalPlan::Project { input: mp(input), exprs: exprs.iter().map(m).collect(), columns: columns.clone() }
            }
            LogicalPlan::ProjectSet { input, srfs, columns } => {
                LogicalPlan::ProjectSet { input: mp(input), srfs: srfs.iter().map(|c| c.map_exprs(m)).collect(), columns: columns.clone() }
            }
            LogicalPlan::Aggregate { input, group_by, aggs, columns } => LogicalPlan::Aggregate {
                input: mp(input),
                group_by: group_by.iter().map(m).collect(),
                aggs: aggs.iter().map(|a| a.map_exprs(m)).collect(),
                columns: columns.clone(),
            },
            LogicalPlan::Window { input, calls, columns } => {
                LogicalPlan::Window { input: mp(input), calls: calls.iter().map(|c| c.map_exprs(m)).collect(), columns: columns.clone() }
            }
            LogicalPlan::Join { left, right, kind, on, filter, columns } => LogicalPlan::Join {
                left: mp(left),
                right: mp(right),
                kind: *kind,
                on: on.iter().map(|(l, r)| (m(l), m(r))).collect(),
                filter: filter.as_ref().map(m),
                columns: columns.clone(),
            },
            LogicalPlan::Sort { input, keys, fetch } => {
                LogicalPlan::Sort { input: mp(input), keys: keys.iter().map(|k| k.map_expr(m)).collect(), fetch: *fetch }
            }
            LogicalPlan::Limit { input, limit, offset } => LogicalPlan::Limit { input: mp(input), limit: *limit, offset: *offset },
            LogicalPlan::Distinct { input } => LogicalPlan::Distinct { input: mp(input) },
            LogicalPlan::DistinctOn { input, keys } => LogicalPlan::DistinctOn { input: mp(input), keys: keys.iter().map(m).collect() },
            LogicalPlan::SetOp { left, right, kind, all } => {
                LogicalPlan::SetOp { left: mp(left), right: mp(right), kind: *kind, all: *all }
            }
            LogicalPlan::RecursiveUnion { anchor, recursive, id, all, columns } => {
                LogicalPlan::RecursiveUnion { anchor: mp(anchor), recursive: mp(recursive), id: *id, all: *all, columns: columns.clone() }
            }
        }
    }

    /// Does any expression in this plan refer to an outer query at `depth`?
    pub fn references_outer(&self, depth: usize) -> bool {
        let found = std::cell::Cell::new(false);
        self.map_exprs(depth, &|e, d| {
            if let Expr::Outer { depth: od, .. } = e {
                if *od == d {
                    found.set(true);
                }
            }
            None
        });
        found.get()
    }

    /// EXPLAIN VERBOSE's logical section: one line per node, children
    /// indented, expressions printed with column positions (`#i`).
    pub fn explain(&self) -> Vec<String> {
        let mut out = Vec::new();
        self.explain_into(0, &mut out);
        out
    }

    fn explain_into(&self, depth: usize, out: &mut Vec<String>) {
        let pad = "  ".repeat(depth);
        let list = |v: &[Expr]| v.iter().map(fmt_expr).collect::<Vec<_>>().join(", ");
        let keys = |v: &[SortKey]| {
            v.iter().map(|k| format!("{}{}", fmt_expr(&k.expr), if k.desc { " DESC" } else { "" })).collect::<Vec<_>>().join(", ")
        };
        let line = match self {
            LogicalPlan::Scan(s) => {
                let mut l = format!("Scan: {}", s.table.name);
                let names: Vec<&str> = s.columns.iter().map(|c| c.name.as_str()).collect();
                let _ = write!(l, " columns=[{}]", names.join(", "));
                if !s.filters.is_empty() {
                    // Filters address table columns: print them by name.
                    let cols = s.table_columns();
                    let named: Vec<String> = s.filters.iter().map(|f| fmt_expr_named(f, &cols)).collect();
                    let _ = write!(l, " filters=[{}]", named.join(", "));
                }
                if let Some((lo, hi)) = s.time_range {
                    let f = |t: i64| if t == i64::MIN || t == i64::MAX { "-".to_string() } else { crate::types::format_timestamp(t) };
                    let _ = write!(l, " time=[{}, {})", f(lo), f(hi));
                }
                if !s.tag_sets.is_empty() {
                    let tags: Vec<String> = s
                        .tag_sets
                        .iter()
                        .map(|(c, v)| {
                            let name = &s.table.columns[*c].name;
                            match v.as_slice() {
                                [one] => format!("{name}={}", fmt_value(one)),
                                many => format!("{name} IN ({})", many.iter().map(fmt_value).collect::<Vec<_>>().join(", ")),
                            }
                        })
                        .collect();
                    let _ = write!(l, " tags=[{}]", tags.join(", "));
                }
                if s.last_row {
                    l.push_str(" last_row");
                }
                l
            }
            LogicalPlan::Memory { name, batches, .. } => {
                format!("Memory: {name} rows={}", batches.iter().map(|b| b.num_rows()).sum::<usize>())
            }
            LogicalPlan::Values { rows, .. } => format!("Values: rows={}", rows.len()),
            LogicalPlan::Series { args, .. } => format!("GenerateSeries: {}", list(args)),
            LogicalPlan::Filter { predicate, .. } => format!("Filter: {}", fmt_expr(predicate)),
            LogicalPlan::Project { exprs, columns, .. } => {
                let items: Vec<String> = exprs.iter().zip(columns).map(|(e, c)| format!("{} AS {}", fmt_expr(e), c.name)).collect();
                format!("Project: {}", items.join(", "))
            }
            LogicalPlan::ProjectSet { srfs, .. } => {
                let c: Vec<String> = srfs.iter().map(|c| format!("{}({})", c.kind.name(), list(&c.args))).collect();
                format!("ProjectSet: [{}]", c.join(", "))
            }
            LogicalPlan::Aggregate { group_by, aggs, .. } => {
                let calls: Vec<String> = aggs.iter().map(fmt_agg).collect();
                format!("Aggregate: group_by=[{}] aggs=[{}]", list(group_by), calls.join(", "))
            }
            LogicalPlan::Window { calls, .. } => {
                let c: Vec<String> = calls.iter().map(|c| format!("{:?}({})", c.func, list(&c.args))).collect();
                format!("Window: [{}]", c.join(", "))
            }
            LogicalPlan::Join { kind, on, filter, .. } => {
                let mut l = format!("Join: {kind:?}");
                if !on.is_empty() {
                    let eqs: Vec<String> = on.iter().map(|(a, b)| format!("{} = {}", fmt_expr(a), fmt_expr(b))).collect();
                    let _ = write!(l, " on=[{}]", eqs.join(", "));
                }
                if let Some(f) = filter {
                    let _ = write!(l, " filter={}", fmt_expr(f));
                }
                l
            }
            LogicalPlan::Sort { keys: k, fetch, .. } => {
                format!("Sort: {}", keys(k)) + &fetch.map(|f| format!(" fetch={f}")).unwrap_or_default()
            }
            LogicalPlan::Limit { limit, offset, .. } => {
                format!("Limit: {} offset={offset}", limit.map(|l| l.to_string()).unwrap_or_else(|| "all".into()))
            }
            LogicalPlan::Distinct { .. } => "Distinct".to_string(),
            LogicalPlan::DistinctOn { keys, .. } => format!("DistinctOn: {}", list(keys)),
            LogicalPlan::SetOp { kind, all, .. } => format!("{kind:?}{}", if *all { " ALL" } else { "" }),
            LogicalPlan::RecursiveUnion { id, all, .. } => format!("RecursiveUnion{}: worktable={id}", if *all { " ALL" } else { "" }),
            LogicalPlan::WorkTable { id, .. } => format!("WorkTable: {id}"),
        };
        out.push(format!("{pad}{line}"));
        for i in self.inputs() {
            i.explain_into(depth + 1, out);
        }
    }
}

impl SubqueryPlan for LogicalPlan {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn map_plan_exprs(&self, depth: usize, f: &dyn Fn(&Expr, usize) -> Option<Expr>) -> SubPlan {
        SubPlan::new(self.map_exprs(depth, f))
    }
}

/// The logical plan of a subquery expression that has not been physically
/// planned yet.
pub fn logical_subplan(p: &SubPlan) -> Option<&LogicalPlan> {
    p.0.as_any().downcast_ref::<LogicalPlan>()
}

fn fmt_value(v: &Value) -> String {
    match v {
        Value::Null => "NULL".into(),
        Value::Bool(b) => b.to_string(),
        Value::Int(_) | Value::Float(_) => crate::types::format_value(v),
        other => format!("'{}'", crate::types::format_value(other).replace('\'', "''")),
    }
}

fn fmt_agg(a: &AggCall) -> String {
    let args: Vec<String> = a.args.iter().map(fmt_expr).collect();
    let mut s = format!("{:?}({}{})", a.func, if a.distinct { "DISTINCT " } else { "" }, args.join(", "));
    if let Some(f) = &a.filter {
        let _ = write!(s, " FILTER ({})", fmt_expr(f));
    }
    s
}

/// An expression in a compact SQL-like form, columns as `#i`.
pub fn fmt_expr(e: &Expr) -> String {
    fmt_with(e, &|i| format!("#{i}"))
}

fn fmt_expr_named(e: &Expr, cols: &[PlanColumn]) -> String {
    fmt_with(e, &|i| cols.get(i).map(|c| c.name.clone()).unwrap_or_else(|| format!("#{i}")))
}

fn fmt_with(e: &Expr, col: &dyn Fn(usize) -> String) -> String {
    let f = |x: &Expr| fmt_with(x, col);
    match e {
        Expr::Column { index, .. } => col(*index),
        Expr::Outer { depth, index, .. } => format!("outer{depth}.#{index}"),
        Expr::Literal { value, .. } => fmt_value(value),
        Expr::Param { index, .. } => format!("${}", index + 1),
        Expr::Binary { op, left, right, .. } => {
            let o = op.symbol();
            format!("({} {o} {})", f(left), f(right))
        }
        Expr::Not(x) => format!("NOT {}", f(x)),
        Expr::Neg(x) => format!("-{}", f(x)),
        Expr::IsNull { expr, negated } => format!("{} IS {}NULL", f(expr), if *negated { "NOT " } else { "" }),
        Expr::IsBool { expr, value, negated } => {
            format!("{} IS {}{}", f(expr), if *negated { "NOT " } else { "" }, if *value { "TRUE" } else { "FALSE" })
        }
        Expr::IsDistinct { left, right, negated } => {
            format!("{} IS {}DISTINCT FROM {}", f(left), if *negated { "NOT " } else { "" }, f(right))
        }
        Expr::Cast { expr, ty } => format!("CAST({} AS {})", f(expr), ty.pg_name()),
        Expr::InList { expr, list, negated } => {
            format!("{} {}IN ({})", f(expr), if *negated { "NOT " } else { "" }, list.iter().map(f).collect::<Vec<_>>().join(", "))
        }
        Expr::Like { expr, pattern, negated, case_insensitive } => {
            format!("{} {}{} {}", f(expr), if *negated { "NOT " } else { "" }, if *case_insensitive { "ILIKE" } else { "LIKE" }, f(pattern))
        }
        Expr::Case { operand, whens, else_expr, .. } => {
            let mut s = "CASE".to_string();
            if let Some(o) = operand {
                let _ = write!(s, " {}", f(o));
            }
            for (w, t) in whens {
                let _ = write!(s, " WHEN {} THEN {}", f(w), f(t));
            }
            if let Some(x) = else_expr {
                let _ = write!(s, " ELSE {}", f(x));
            }
            s + " END"
        }
        Expr::Func { name, args, .. } => format!("{name}({})", args.iter().map(f).collect::<Vec<_>>().join(", ")),
        Expr::Subquery { kind, correlated, .. } => {
            use crate::exec::expr::SubqueryKind as K;
            let c = if *correlated { "correlated " } else { "" };
            match kind {
                K::Scalar => format!("({c}subquery)"),
                K::Rows => format!("LATERAL ({c}subquery)"),
                K::Array => format!("ARRAY({c}subquery)"),
                K::Exists { negated } => format!("{}EXISTS ({c}subquery)", if *negated { "NOT " } else { "" }),
                K::In { expr, negated } => format!("{} {}IN ({c}subquery)", f(expr), if *negated { "NOT " } else { "" }),
                K::Quantified { expr, op, all } => {
                    format!("{} {op:?} {} ({c}subquery)", f(expr), if *all { "ALL" } else { "ANY" })
                }
            }
        }
        Expr::Agg(a) => fmt_agg(a),
        Expr::Window(w) => format!("{:?}(..) OVER (..)", w.func),
    }
}
