//! The physical plan the planner hands to the executor.
//!
//! Every node knows its output columns; expressions refer to input
//! columns by position.

use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::datatypes::{Field, Schema, SchemaRef};

use super::expr::Expr;
use crate::storage::{Region, ScanRequest};
use crate::types::SqlType;

/// One output column of a plan node.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PlanColumn {
    pub name: String,
    /// Table alias or name the column came from, for qualified names.
    pub qualifier: Option<String>,
    pub ty: SqlType,
}

impl PlanColumn {
    pub fn new(name: impl Into<String>, ty: SqlType) -> Self {
        PlanColumn { name: name.into(), qualifier: None, ty }
    }
}

/// Build the arrow schema for plan columns.
pub fn arrow_schema(cols: &[PlanColumn]) -> SchemaRef {
    Arc::new(Schema::new(cols.iter().map(|c| Field::new(&c.name, c.ty.to_arrow(), true)).collect::<Vec<_>>()))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JoinKind {
    Inner,
    Left,
    Right,
    Full,
    /// Rows of the left side with a match (EXISTS / IN rewrites).
    Semi,
    Anti,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SetOpKind {
    Union,
    Intersect,
    Except,
}

/// An aggregate function call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AggFunc {
    CountStar,
    Count,
    Sum,
    Avg,
    Min,
    Max,
    BoolAnd,
    BoolOr,
    StringAgg,
    /// The values (NULLs included) as an array, in input or ORDER BY order.
    ArrayAgg,
    StddevSamp,
    StddevPop,
    VarSamp,
    VarPop,
    /// `first(x, t)`: x of the row with the least t among rows with a
    /// non-NULL x (ties: the least x) — GreptimeDB's / TDengine's
    /// `first(x)` by the time index.
    First,
    /// `last(x, t)`: x of the row with the greatest t (ties: the greatest x).
    Last,
    /// Internal (incremental flows): how many rows hold min(x).
    MinCount,
    /// Internal (incremental flows): how many rows hold max(x).
    MaxCount,
    /// Internal (incremental flows): the exact sum of float8 x, as
    /// `exact_sum::ExactSum`'s text form (a state that subtracts exactly).
    SumExact,
    /// A user-defined aggregate (`CREATE AGGREGATE`), by its number in
    /// `user_agg`'s registry.
    User(u32),
    /// The two-argument statistics `f(y, x)` over float8 (regr_*, covar_*,
    /// corr), from PostgreSQL's float8_regr_accum state.
    Regr(RegrFunc),
    /// An ordered-set or hypothetical-set aggregate,
    /// `f(direct args) WITHIN GROUP (ORDER BY keys)`.
    OrderedSet(OrderedSetFunc),
}

/// PostgreSQL's built-in ordered-set aggregates (percentile_cont /
/// percentile_disc of one fraction or an array of them, mode) and
/// hypothetical-set aggregates (rank … cume_dist of a hypothetical row).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OrderedSetFunc {
    PercentileCont,
    PercentileDisc,
    Mode,
    Rank,
    DenseRank,
    PercentRank,
    CumeDist,
}

impl OrderedSetFunc {
    pub fn from_name(name: &str) -> Option<OrderedSetFunc> {
        Some(match name {
            "percentile_cont" => OrderedSetFunc::PercentileCont,
            "percentile_disc" => OrderedSetFunc::PercentileDisc,
            "mode" => OrderedSetFunc::Mode,
            "rank" => OrderedSetFunc::Rank,
            "dense_rank" => OrderedSetFunc::DenseRank,
            "percent_rank" => OrderedSetFunc::PercentRank,
            "cume_dist" => OrderedSetFunc::CumeDist,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            OrderedSetFunc::PercentileCont => "percentile_cont",
            OrderedSetFunc::PercentileDisc => "percentile_disc",
            OrderedSetFunc::Mode => "mode",
            OrderedSetFunc::Rank => "rank",
            OrderedSetFunc::DenseRank => "dense_rank",
            OrderedSetFunc::PercentRank => "percent_rank",
            OrderedSetFunc::CumeDist => "cume_dist",
        }
    }

    /// A hypothetical-set aggregate: as many direct arguments as keys.
    pub fn hypothetical(self) -> bool {
        matches!(self, OrderedSetFunc::Rank | OrderedSetFunc::DenseRank | OrderedSetFunc::PercentRank | OrderedSetFunc::CumeDist)
    }
}

/// The aggregates of PostgreSQL's float8_regr_accum state
/// (N, Sx, Sxx, Sy, Syy, Sxy), each with its final function.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RegrFunc {
    Count,
    Sxx,
    Syy,
    Sxy,
    Avgx,
    Avgy,
    R2,
    Slope,
    Intercept,
    CovarPop,
    CovarSamp,
    Corr,
}

impl RegrFunc {
    pub fn from_name(name: &str) -> Option<RegrFunc> {
        Some(match name {
            "regr_count" => RegrFunc::Count,
            "regr_sxx" => RegrFunc::Sxx,
            "regr_syy" => RegrFunc::Syy,
            "regr_sxy" => RegrFunc::Sxy,
            "regr_avgx" => RegrFunc::Avgx,
            "regr_avgy" => RegrFunc::Avgy,
            "regr_r2" => RegrFunc::R2,
            "regr_slope" => RegrFunc::Slope,
            "regr_intercept" => RegrFunc::Intercept,
            "covar_pop" => RegrFunc::CovarPop,
            "covar_samp" => RegrFunc::CovarSamp,
            "corr" => RegrFunc::Corr,
            _ => return None,
        })
    }
}

/// An aggregate call. For string_agg and array_agg, whose result follows
/// the input order, `args` after the function's own arguments
/// (`value_arity`) are the keys of the call's ORDER BY, each followed by an
/// integer literal with its direction (`order_flags`): kept in `args` so
/// every pass that maps, prunes or remaps arguments carries them along.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AggCall {
    pub func: AggFunc,
    pub args: Vec<Expr>,
    pub distinct: bool,
    pub filter: Option<Expr>,
    pub ty: SqlType,
}

/// A window function.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WindowFunc {
    RowNumber,
    Rank,
    DenseRank,
    Lag,
    Lead,
    FirstValue,
    LastValue,
    NthValue,
    Ntile,
    PercentRank,
    CumeDist,
    Agg(AggFunc),
}

/// The frame of a window aggregate.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum WindowFrame {
    /// PostgreSQL's default: the whole partition without ORDER BY, else from
    /// the partition start through the current row's peers.
    Default,
    /// ROWS BETWEEN n PRECEDING (None = UNBOUNDED) AND CURRENT ROW.
    RowsPreceding(Option<usize>),
    /// Any other frame: ROWS, RANGE or GROUPS between two bounds.
    General(Box<GeneralFrame>),
}

impl WindowFrame {
    /// The expressions of a general frame (offsets, RANGE key).
    pub fn exprs(&self) -> Vec<&Expr> {
        let WindowFrame::General(g) = self else { return vec![] };
        let mut v = Vec::new();
        for b in [&g.start, &g.end] {
            if let FrameBound::Preceding(e) | FrameBound::Following(e) = b {
                v.push(e);
            }
        }
        v.extend(g.range_key.iter());
        v
    }

    /// This frame with `m` applied to each expression.
    pub fn try_map<E>(&self, m: impl Fn(&Expr) -> std::result::Result<Expr, E>) -> std::result::Result<WindowFrame, E> {
        let WindowFrame::General(g) = self else { return Ok(self.clone()) };
        let bound = |b: &FrameBound| -> std::result::Result<FrameBound, E> {
            Ok(match b {
                FrameBound::Preceding(e) => FrameBound::Preceding(m(e)?),
                FrameBound::Following(e) => FrameBound::Following(m(e)?),
                other => other.clone(),
            })
        };
        Ok(WindowFrame::General(Box::new(GeneralFrame {
            units: g.units,
            start: bound(&g.start)?,
            end: bound(&g.end)?,
            range_key: g.range_key.as_ref().map(&m).transpose()?,
            range_offsets: g.range_offsets,
            exclude: g.exclude,
        })))
    }

    pub fn map(&self, m: impl Fn(&Expr) -> Expr) -> WindowFrame {
        self.try_map(|e| Ok::<Expr, std::convert::Infallible>(m(e))).unwrap_or_else(|e| match e {})
    }
}

/// `{ROWS | RANGE | GROUPS} BETWEEN start AND end`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct GeneralFrame {
    pub units: FrameUnits,
    pub start: FrameBound,
    pub end: FrameBound,
    /// RANGE with offsets: the ORDER BY key in the bounds' type, compared with them.
    pub range_key: Option<Expr>,
    /// RANGE on a number key (integers, floats, numeric): the bounds are the offsets
    /// themselves, applied by PostgreSQL's in_range rules (no overflow, infinities, NaN);
    /// otherwise (dates, times, intervals) each bound is the key plus or minus its offset.
    pub range_offsets: bool,
    /// `EXCLUDE …`: rows of the current row's peer group taken out of the frame.
    pub exclude: FrameExclude,
}

/// A frame's EXCLUDE clause (PostgreSQL's frame_exclusion).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum FrameExclude {
    /// `EXCLUDE NO OTHERS`, the default.
    #[default]
    NoOthers,
    CurrentRow,
    /// The current row and its peers.
    Group,
    /// The current row's peers, not the row itself.
    Ties,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FrameUnits {
    Rows,
    Range,
    Groups,
}

/// A frame bound; an offset is a constant expression (a count of rows or peer groups, or for
/// RANGE a distance in the ORDER BY column's units).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum FrameBound {
    UnboundedPreceding,
    Preceding(Expr),
    CurrentRow,
    Following(Expr),
    UnboundedFollowing,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct WindowCall {
    pub func: WindowFunc,
    pub args: Vec<Expr>,
    pub partition_by: Vec<Expr>,
    pub order_by: Vec<SortKey>,
    pub frame: WindowFrame,
    pub ty: SqlType,
}

/// A set-returning function of a select list, run by a ProjectSet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SrfKind {
    /// generate_series(start, stop[, step]) over integers, or timestamps
    /// with an interval step.
    GenerateSeries,
    /// unnest(array): its elements (arrays are text values here).
    Unnest,
    /// generate_subscripts(array, dim[, reverse]).
    GenerateSubscripts,
    /// information_schema._pg_expandarray(array): records (x, n), two columns.
    ExpandArray,
    /// pg_listening_channels(): the channels the session listens on
    /// (`ActivityRow::listening`).
    ListeningChannels,
    /// A LATERAL FROM item: the rows of its one argument, a
    /// `SubqueryKind::Rows` subquery over the input row (the FROM items to
    /// its left). `left`: LEFT JOIN LATERAL, no rows give one NULL row.
    Lateral { left: bool },
}

impl SrfKind {
    pub fn from_name(name: &str) -> Option<SrfKind> {
        Some(match name {
            "generate_series" => SrfKind::GenerateSeries,
            "unnest" => SrfKind::Unnest,
            "generate_subscripts" => SrfKind::GenerateSubscripts,
            "_pg_expandarray" => SrfKind::ExpandArray,
            "pg_listening_channels" => SrfKind::ListeningChannels,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            SrfKind::GenerateSeries => "generate_series",
            SrfKind::Unnest => "unnest",
            SrfKind::GenerateSubscripts => "generate_subscripts",
            SrfKind::ExpandArray => "_pg_expandarray",
            SrfKind::ListeningChannels => "pg_listening_channels",
            SrfKind::Lateral { .. } => "lateral",
        }
    }
}

/// One set-returning call: its arguments (over the input row) and the types
/// of the columns it adds (one, or a record's fields).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SrfCall {
    pub kind: SrfKind,
    pub args: Vec<Expr>,
    pub out: Vec<(String, SqlType)>,
}

impl SrfCall {
    pub fn map_exprs(&self, m: impl Fn(&Expr) -> Expr) -> SrfCall {
        SrfCall { kind: self.kind, args: self.args.iter().map(m).collect(), out: self.out.clone() }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SortKey {
    pub expr: Expr,
    pub desc: bool,
    pub nulls_first: bool,
}

impl AggCall {
    /// The direction literal of an ORDER BY key: bit 0 DESC, bit 1 NULLS FIRST.
    pub fn order_flags(desc: bool, nulls_first: bool) -> i64 {
        desc as i64 | (nulls_first as i64) << 1
    }

    /// How many of `args` are the function's own arguments.
    pub fn value_arity(&self) -> usize {
        match self.func {
            AggFunc::CountStar => 0,
            AggFunc::StringAgg | AggFunc::Regr(_) => 2.min(self.args.len()),
            // Direct arguments, then (key, direction) pairs: a
            // hypothetical-set call has one direct argument per key.
            AggFunc::OrderedSet(OrderedSetFunc::Mode) => 0,
            AggFunc::OrderedSet(f) if f.hypothetical() => self.args.len() / 3,
            AggFunc::OrderedSet(_) => 1.min(self.args.len()),
            _ => 1.min(self.args.len()),
        }
    }

    /// The ORDER BY keys: (argument position, desc, nulls first).
    pub fn order_keys(&self) -> Vec<(usize, bool, bool)> {
        if !matches!(self.func, AggFunc::StringAgg | AggFunc::ArrayAgg | AggFunc::OrderedSet(_)) {
            return vec![];
        }
        let first = self.value_arity();
        (first..self.args.len())
            .step_by(2)
            .map(|i| {
                let flags = match self.args.get(i + 1) {
                    Some(Expr::Literal { value: crate::types::Value::Int(f), .. }) => *f,
                    _ => 0,
                };
                (i, flags & 1 != 0, flags & 2 != 0)
            })
            .collect()
    }

    /// This call with `m` applied to each expression (shared by the logical
    /// and physical plans' `map_exprs`).
    pub fn map_exprs(&self, m: impl Fn(&Expr) -> Expr) -> AggCall {
        AggCall {
            func: self.func,
            args: self.args.iter().map(&m).collect(),
            distinct: self.distinct,
            filter: self.filter.as_ref().map(&m),
            ty: self.ty,
        }
    }
}

impl WindowCall {
    /// This call with `m` applied to each expression.
    pub fn map_exprs(&self, m: impl Fn(&Expr) -> Expr) -> WindowCall {
        WindowCall {
            func: self.func,
            args: self.args.iter().map(&m).collect(),
            partition_by: self.partition_by.iter().map(&m).collect(),
            order_by: self.order_by.iter().map(|k| k.map_expr(&m)).collect(),
            frame: self.frame.map(&m),
            ty: self.ty,
        }
    }
}

impl SortKey {
    /// This key with `m` applied to its expression.
    pub fn map_expr(&self, m: impl Fn(&Expr) -> Expr) -> SortKey {
        SortKey { expr: m(&self.expr), desc: self.desc, nulls_first: self.nulls_first }
    }
}

/// The regions a scan reads (Debug prints their ids only).
#[derive(Clone)]
pub struct Regions(pub Vec<Arc<Region>>, pub Vec<crate::storage::SeqBounds>);

impl std::fmt::Debug for Regions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.0.iter().map(|r| r.id)).finish()
    }
}

/// A physical plan node.
#[derive(Debug, Clone)]
pub enum Plan {
    /// Scan the regions of a table.
    Scan {
        regions: Regions,
        request: ScanRequest,
        columns: Vec<PlanColumn>,
    },
    /// Batches computed at plan time (system tables, VALUES of constants).
    Memory {
        batches: Vec<RecordBatch>,
        columns: Vec<PlanColumn>,
    },
    /// Rows of expressions (VALUES); each row evaluated over an empty input.
    Values {
        rows: Vec<Vec<Expr>>,
        columns: Vec<PlanColumn>,
    },
    /// generate_series(start, stop[, step]), arguments evaluated when run
    /// (so correlated arguments work after substitution).
    Series {
        args: Vec<Expr>,
        columns: Vec<PlanColumn>,
    },
    Filter {
        input: Box<Plan>,
        predicate: Expr,
    },
    Project {
        input: Box<Plan>,
        exprs: Vec<Expr>,
        columns: Vec<PlanColumn>,
    },
    /// Set-returning functions of a select list: the input's columns, then
    /// each call's columns. The calls of one row advance in lockstep; the
    /// row repeats until the longest set ends, shorter ones give NULL.
    ProjectSet {
        input: Box<Plan>,
        srfs: Vec<SrfCall>,
        columns: Vec<PlanColumn>,
    },
    Aggregate {
        input: Box<Plan>,
        group_by: Vec<Expr>,
        aggs: Vec<AggCall>,
        columns: Vec<PlanColumn>,
    },
    Sort {
        input: Box<Plan>,
        keys: Vec<SortKey>,
        limit: Option<usize>,
    },
    /// Window functions: the input's columns plus one column per call.
    Window {
        input: Box<Plan>,
        calls: Vec<WindowCall>,
        columns: Vec<PlanColumn>,
    },
    Limit {
        input: Box<Plan>,
        limit: Option<usize>,
        offset: usize,
    },
    /// Hash join on equality keys (empty keys = nested loop), with an
    /// optional residual condition over the joined row.
    Join {
        left: Box<Plan>,
        right: Box<Plan>,
        kind: JoinKind,
        left_keys: Vec<Expr>,
        right_keys: Vec<Expr>,
        condition: Option<Expr>,
        columns: Vec<PlanColumn>,
    },
    SetOp {
        left: Box<Plan>,
        right: Box<Plan>,
        kind: SetOpKind,
        all: bool,
    },
    Distinct {
        input: Box<Plan>,
    },
    /// DISTINCT ON: the first row of each key, in input order.
    DistinctOn {
        input: Box<Plan>,
        keys: Vec<Expr>,
    },
    /// WITH RECURSIVE: the anchor's rows, then `recursive` run over the rows
    /// the previous run added (its `WorkTable` nodes of the same `id`) until
    /// a run adds none; `all: false` drops rows seen before.
    RecursiveUnion {
        anchor: Box<Plan>,
        recursive: Box<Plan>,
        id: usize,
        all: bool,
        columns: Vec<PlanColumn>,
    },
    /// The working table of the `RecursiveUnion` `id`; that operator puts
    /// the rows in (as a `Memory` node) before it builds each run.
    WorkTable {
        id: usize,
        columns: Vec<PlanColumn>,
    },
    /// An aggregation (`input`, a `Plan::Aggregate`) under a top-k on its
    /// time-bucket group key, run over a narrowed time range first (see
    /// `exec/narrow.rs`); the same columns and rows as the aggregation
    /// for what the top-k above takes.
    NarrowedAggregate {
        input: Box<Plan>,
        narrow: Narrow,
    },
    /// A PromQL series operator (`exec/promql.rs`) over `input`.
    Prom {
        input: Box<Plan>,
        node: super::promql::PromNode,
        columns: Vec<PlanColumn>,
    },
}

/// How a `Plan::NarrowedAggregate` narrows: the top-k above sorts first by
/// output column `key` (a time bucket of the scan's time index, timestamp
/// typed), descending or not, and takes `k` rows; `step` is a guess of one
/// bucket's width in microseconds (the first range spans `k + 1` of them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Narrow {
    pub key: usize,
    pub desc: bool,
    pub k: usize,
    pub step: i64,
}

impl Plan {
    pub fn columns(&self) -> &[PlanColumn] {
        match self {
            Plan::Scan { columns, .. }
            | Plan::Memory { columns, .. }
            | Plan::Values { columns, .. }
            | Plan::Series { columns, .. }
            | Plan::Project { columns, .. }
            | Plan::ProjectSet { columns, .. }
            | Plan::Aggregate { columns, .. }
            | Plan::Window { columns, .. }
            | Plan::Join { columns, .. }
            | Plan::RecursiveUnion { columns, .. }
            | Plan::Prom { columns, .. }
            | Plan::WorkTable { columns, .. } => columns,
            Plan::Filter { input, .. }
            | Plan::Sort { input, .. }
            | Plan::Limit { input, .. }
            | Plan::Distinct { input }
            | Plan::DistinctOn { input, .. }
            | Plan::NarrowedAggregate { input, .. } => input.columns(),
            Plan::SetOp { left, .. } => left.columns(),
        }
    }

    /// Apply `f` to every expression of this node and its children,
    /// including plans nested in subquery expressions (with depth + 1).
    pub fn map_exprs(&self, depth: usize, f: &dyn Fn(&Expr, usize) -> Option<Expr>) -> Plan {
        let m = |e: &Expr| e.map(depth, f);
        let mp = |p: &Plan| Box::new(p.map_exprs(depth, f));
        match self {
            Plan::Scan { .. } | Plan::Memory { .. } | Plan::WorkTable { .. } => self.clone(),
            Plan::Values { rows, columns } => {
                Plan::Values { rows: rows.iter().map(|r| r.iter().map(m).collect()).collect(), columns: columns.clone() }
            }
            Plan::Series { args, columns } => Plan::Series { args: args.iter().map(m).collect(), columns: columns.clone() },
            Plan::Filter { input, predicate } => Plan::Filter { input: mp(input), predicate: m(predicate) },
            Plan::Project { input, exprs, columns } => {
                Plan::Project { input: mp(input), exprs: exprs.iter().map(m).collect(), columns: columns.clone() }
            }
            Plan::ProjectSet { input, srfs, columns } => {
                Plan::ProjectSet { input: mp(input), srfs: srfs.iter().map(|c| c.map_exprs(m)).collect(), columns: columns.clone() }
            }
            Plan::Aggregate { input, group_by, aggs, columns } => Plan::Aggregate {
                input: mp(input),
                group_by: group_by.iter().map(m).collect(),
                aggs: aggs.iter().map(|a| a.map_exprs(m)).collect(),
                columns: columns.clone(),
            },
            Plan::Sort { input, keys, limit } => {
                Plan::Sort { input: mp(input), keys: keys.iter().map(|k| k.map_expr(m)).collect(), limit: *limit }
            }
            Plan::Limit { input, limit, offset } => Plan::Limit { input: mp(input), limit: *limit, offset: *offset },
            Plan::Window { input, calls, columns } => {
                Plan::Window { input: mp(input), calls: calls.iter().map(|c| c.map_exprs(m)).collect(), columns: columns.clone() }
            }
            Plan::Join { left, right, kind, left_keys, right_keys, condition, columns } => Plan::Join {
                left: mp(left),
                right: mp(right),
                kind: *kind,
                left_keys: left_keys.iter().map(m).collect(),
                right_keys: right_keys.iter().map(m).collect(),
                condition: condition.as_ref().map(m),
                columns: columns.clone(),
            },
            Plan::SetOp { left, right, kind, all } => Plan::SetOp { left: mp(left), right: mp(right), kind: *kind, all: *all },
            Plan::Distinct { input } => Plan::Distinct { input: mp(input) },
            Plan::DistinctOn { input, keys } => Plan::DistinctOn { input: mp(input), keys: keys.iter().map(m).collect() },
            Plan::NarrowedAggregate { input, narrow } => Plan::NarrowedAggregate { input: mp(input), narrow: *narrow },
            Plan::Prom { input, node, columns } => Plan::Prom { input: mp(input), node: node.clone(), columns: columns.clone() },
            Plan::RecursiveUnion { anchor, recursive, id, all, columns } => {
                Plan::RecursiveUnion { anchor: mp(anchor), recursive: mp(recursive), id: *id, all: *all, columns: columns.clone() }
            }
        }
    }

    /// This plan with every `WorkTable` of `id` replaced by `batches`
    /// (subquery expressions never read a working table: the binder refuses it).
    pub fn with_work_table(&self, id: usize, batches: &[RecordBatch]) -> Plan {
        let mut p = self.clone();
        p.fill_work_table(id, batches);
        p
    }

    fn fill_work_table(&mut self, id: usize, batches: &[RecordBatch]) {
        match self {
            Plan::WorkTable { id: w, columns } if *w == id => {
                *self = Plan::Memory { batches: batches.to_vec(), columns: std::mem::take(columns) };
            }
            Plan::Scan { .. } | Plan::Memory { .. } | Plan::Values { .. } | Plan::Series { .. } | Plan::WorkTable { .. } => {}
            Plan::Filter { input, .. }
            | Plan::Project { input, .. }
            | Plan::ProjectSet { input, .. }
            | Plan::Aggregate { input, .. }
            | Plan::Window { input, .. }
            | Plan::Sort { input, .. }
            | Plan::Limit { input, .. }
            | Plan::Distinct { input }
            | Plan::DistinctOn { input, .. }
            | Plan::Prom { input, .. }
            | Plan::NarrowedAggregate { input, .. } => input.fill_work_table(id, batches),
            Plan::Join { left, right, .. } | Plan::SetOp { left, right, .. } => {
                left.fill_work_table(id, batches);
                right.fill_work_table(id, batches);
            }
            Plan::RecursiveUnion { anchor, recursive, .. } => {
                anchor.fill_work_table(id, batches);
                recursive.fill_work_table(id, batches);
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
}

impl Plan {
    /// EXPLAIN: one line per node, children indented.
    pub fn explain(&self) -> Vec<String> {
        let mut out = Vec::new();
        self.explain_into(0, &mut out);
        out
    }

    fn explain_into(&self, depth: usize, out: &mut Vec<String>) {
        let pad = "  ".repeat(depth);
        let names = |cols: &[PlanColumn]| cols.iter().map(|c| c.name.clone()).collect::<Vec<_>>().join(", ");
        let line = match self {
            Plan::Scan { regions, request, columns } => {
                let mut l = format!(
                    "Scan {} ({} region{})",
                    regions.0.first().map(|r| r.desc.table_name.clone()).unwrap_or_default(),
                    regions.0.len(),
                    if regions.0.len() == 1 { "" } else { "s" }
                );
                l.push_str(&format!(" columns: [{}]", names(columns)));
                if let Some((lo, hi)) = request.time_range {
                    let f = |t: i64| if t == i64::MIN || t == i64::MAX { "-".to_string() } else { crate::types::format_timestamp(t) };
                    l.push_str(&format!(" time: [{}, {})", f(lo), f(hi)));
                }
                if !request.filters.is_empty() {
                    l.push_str(&format!(" tag filters: {}", request.filters.len()));
                }
                if !request.cmps.is_empty() {
                    use crate::storage::{CmpOp, CmpValue};
                    let cmps: Vec<String> = request
                        .cmps
                        .iter()
                        .map(|c| {
                            let name =
                                regions.0.first().and_then(|r| r.desc.schema.fields().get(c.column)).map_or("?", |f| f.name().as_str());
                            let op = match c.op {
                                CmpOp::Lt => "<",
                                CmpOp::LtEq => "<=",
                                CmpOp::Gt => ">",
                                CmpOp::GtEq => ">=",
                            };
                            match c.value {
                                CmpValue::F64(v) => format!("{name} {op} {v}"),
                                CmpValue::I64(v) => format!("{name} {op} {v}"),
                            }
                        })
                        .collect();
                    l.push_str(&format!(" read filters: [{}]", cmps.join(", ")));
                }
                if !regions.1.is_empty() {
                    l.push_str(" incremental");
                }
                if request.last_row {
                    l.push_str(" last row per series");
                }
                l
            }
            Plan::Memory { batches, columns } => {
                format!("Memory rows: {} columns: [{}]", batches.iter().map(|b| b.num_rows()).sum::<usize>(), names(columns))
            }
            Plan::Values { rows, .. } => format!("Values rows: {}", rows.len()),
            Plan::Series { .. } => "GenerateSeries".to_string(),
            Plan::Filter { .. } => "Selection".to_string(),
            Plan::Project { columns, .. } => format!("Projection [{}]", names(columns)),
            Plan::ProjectSet { srfs, .. } => format!("ProjectSet [{}]", srfs.iter().map(|c| c.kind.name()).collect::<Vec<_>>().join(", ")),
            Plan::Aggregate { group_by, aggs, .. } => format!(
                "{} group keys: {} aggregates: {}",
                if group_by.is_empty() { "SimpleAggregate" } else { "HashAggregate" },
                group_by.len(),
                aggs.iter().map(|a| format!("{:?}", a.func)).collect::<Vec<_>>().join(", ")
            ),
            Plan::Window { calls, .. } => {
                format!("Window [{}]", calls.iter().map(|c| format!("{:?}", c.func)).collect::<Vec<_>>().join(", "))
            }
            Plan::Sort { keys, limit, .. } => {
                format!("{} keys: {}", if limit.is_some() { "TopN" } else { "Sort" }, keys.len())
                    + &limit.map(|l| format!(" limit: {l}")).unwrap_or_default()
            }
            Plan::Limit { limit, offset, .. } => {
                format!("Limit {} offset {offset}", limit.map(|l| l.to_string()).unwrap_or_else(|| "all".into()))
            }
            Plan::Join { kind, left_keys, condition, .. } => format!(
                "{} {:?} keys: {}{}",
                if left_keys.is_empty() { "NestedLoopJoin" } else { "HashJoin" },
                kind,
                left_keys.len(),
                if condition.is_some() { " with condition" } else { "" }
            ),
            Plan::SetOp { kind, all, .. } => format!("{kind:?}{}", if *all { " ALL" } else { "" }),
            Plan::Distinct { .. } => "Distinct".to_string(),
            Plan::DistinctOn { keys, .. } => format!("DistinctOn keys: {}", keys.len()),
            Plan::RecursiveUnion { id, all, .. } => format!("RecursiveUnion{} worktable: {id}", if *all { " ALL" } else { "" }),
            Plan::WorkTable { id, columns } => format!("WorkTable {id} columns: [{}]", names(columns)),
            Plan::NarrowedAggregate { narrow, .. } => {
                format!("TimeNarrowed top: {} {}", narrow.k, if narrow.desc { "newest" } else { "oldest" })
            }
            Plan::Prom { node, .. } => node.describe(),
        };
        out.push(format!("{pad}{line}"));
        match self {
            Plan::Filter { input, .. }
            | Plan::Project { input, .. }
            | Plan::ProjectSet { input, .. }
            | Plan::Aggregate { input, .. }
            | Plan::Window { input, .. }
            | Plan::Sort { input, .. }
            | Plan::Limit { input, .. }
            | Plan::Distinct { input }
            | Plan::DistinctOn { input, .. }
            | Plan::Prom { input, .. }
            | Plan::NarrowedAggregate { input, .. } => input.explain_into(depth + 1, out),
            Plan::Join { left, right, .. } | Plan::SetOp { left, right, .. } => {
                left.explain_into(depth + 1, out);
                right.explain_into(depth + 1, out);
            }
            Plan::RecursiveUnion { anchor, recursive, .. } => {
                anchor.explain_into(depth + 1, out);
                recursive.explain_into(depth + 1, out);
            }
            _ => {}
        }
    }
}
