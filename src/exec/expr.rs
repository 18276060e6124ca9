//! Bound expressions, evaluated a whole column at a time with arrow kernels.
//!
//! Types are decided by the planner: both sides of a binary operator
//! arrive with the same type. Conditional parts (AND's right side, CASE
//! branches) are evaluated only on the rows that need them, so
//! `b <> 0 AND a / b > 1` never divides by zero.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use parking_lot::Mutex;

use arrow::array::*;
use arrow::compute::kernels::{boolean, cmp, numeric};
use arrow::compute::{cast_with_options, take, CastOptions};
use arrow::datatypes::*;

use super::plan::{AggCall, Plan, SortKey, WindowCall};
use super::ExecCtx;
use crate::error::Result;
use crate::types::{format_value, value_at, values_to_array, SqlType, Value};
use crate::{bail, err};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Eq,
    NotEq,
    Lt,
    LtEq,
    Gt,
    GtEq,
    And,
    Or,
    Concat,
}

impl BinOp {
    /// Whether a comparison operator holds for `a` and `b` ordered as `o`
    /// (None for an operator that is not a comparison).
    pub fn holds(self, o: std::cmp::Ordering) -> Option<bool> {
        Some(match self {
            BinOp::Eq => o.is_eq(),
            BinOp::NotEq => o.is_ne(),
            BinOp::Lt => o.is_lt(),
            BinOp::LtEq => o.is_le(),
            BinOp::Gt => o.is_gt(),
            BinOp::GtEq => o.is_ge(),
            _ => return None,
        })
    }

    /// The operator with its operands swapped: `a < b` is `b > a`
    /// (comparisons flip, every other operator stays).
    pub fn commuted(self) -> BinOp {
        match self {
            BinOp::Lt => BinOp::Gt,
            BinOp::LtEq => BinOp::GtEq,
            BinOp::Gt => BinOp::Lt,
            BinOp::GtEq => BinOp::LtEq,
            o => o,
        }
    }

    /// The operator as SQL spells it.
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Mod => "%",
            BinOp::Eq => "=",
            BinOp::NotEq => "<>",
            BinOp::Lt => "<",
            BinOp::LtEq => "<=",
            BinOp::Gt => ">",
            BinOp::GtEq => ">=",
            BinOp::And => "AND",
            BinOp::Or => "OR",
            BinOp::Concat => "||",
        }
    }

    pub fn is_comparison(self) -> bool {
        matches!(self, BinOp::Eq | BinOp::NotEq | BinOp::Lt | BinOp::LtEq | BinOp::Gt | BinOp::GtEq)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum SubqueryKind {
    Scalar,
    /// Every row and column: a LATERAL FROM item (`SrfKind::Lateral`),
    /// never evaluated as a value.
    Rows,
    /// `ARRAY(subquery)`: the first column's values as an array literal.
    Array,
    Exists {
        negated: bool,
    },
    In {
        expr: Box<Expr>,
        negated: bool,
    },
    /// `expr op ANY/ALL (subquery)`.
    Quantified {
        expr: Box<Expr>,
        op: BinOp,
        all: bool,
    },
}

/// A cache for subquery results: uncorrelated ones run once; correlated
/// ones once per distinct outer row.
#[derive(Debug, Default)]
pub struct SubqueryCache {
    pub results: Mutex<HashMap<Vec<Key>, Arc<Vec<Vec<Value>>>>>,
}

/// A cache is run-time state, not part of what an expression means: all
/// caches compare equal.
impl PartialEq for SubqueryCache {
    fn eq(&self, _: &SubqueryCache) -> bool {
        true
    }
}

impl Eq for SubqueryCache {}

impl std::hash::Hash for SubqueryCache {
    fn hash<H: std::hash::Hasher>(&self, _: &mut H) {}
}

/// The plan of a subquery expression. Before physical planning it is the
/// planner's logical plan, afterwards exec's physical [`Plan`]; exec knows
/// only this trait and runs only the physical one.
pub trait SubqueryPlan: std::fmt::Debug + Send + Sync + 'static {
    fn as_any(&self) -> &dyn std::any::Any;
    /// The same plan with `f` applied to its expressions (see `Plan::map_exprs`).
    fn map_plan_exprs(&self, depth: usize, f: &dyn Fn(&Expr, usize) -> Option<Expr>) -> SubPlan;
}

/// A shared subquery plan. Two subquery expressions are equal when they
/// share the same plan (plans are not compared structurally).
#[derive(Debug, Clone)]
pub struct SubPlan(pub Arc<dyn SubqueryPlan>);

impl SubPlan {
    pub fn new(p: impl SubqueryPlan) -> SubPlan {
        SubPlan(Arc::new(p))
    }

    /// The physical plan, if this subquery has been physically planned.
    pub fn physical(&self) -> Option<&Plan> {
        self.0.as_any().downcast_ref::<Plan>()
    }
}

impl PartialEq for SubPlan {
    fn eq(&self, o: &SubPlan) -> bool {
        std::ptr::addr_eq(Arc::as_ptr(&self.0), Arc::as_ptr(&o.0))
    }
}

impl Eq for SubPlan {}

impl std::hash::Hash for SubPlan {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        (Arc::as_ptr(&self.0) as *const () as usize).hash(h)
    }
}

impl SubqueryPlan for Plan {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn map_plan_exprs(&self, depth: usize, f: &dyn Fn(&Expr, usize) -> Option<Expr>) -> SubPlan {
        SubPlan::new(self.map_exprs(depth, f))
    }
}

/// A bound expression over the input's columns by position. Compared and
/// hashed structurally (subquery plans by identity).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Expr {
    Column {
        index: usize,
        ty: SqlType,
    },
    /// A column of an enclosing query's row (correlated subquery).
    Outer {
        depth: usize,
        index: usize,
        ty: SqlType,
    },
    Literal {
        value: Value,
        ty: SqlType,
    },
    Param {
        index: usize,
        ty: SqlType,
    },
    Binary {
        op: BinOp,
        left: Box<Expr>,
        right: Box<Expr>,
        ty: SqlType,
    },
    Not(Box<Expr>),
    Neg(Box<Expr>),
    IsNull {
        expr: Box<Expr>,
        negated: bool,
    },
    /// IS [NOT] TRUE / FALSE.
    IsBool {
        expr: Box<Expr>,
        value: bool,
        negated: bool,
    },
    IsDistinct {
        left: Box<Expr>,
        right: Box<Expr>,
        negated: bool,
    },
    Cast {
        expr: Box<Expr>,
        ty: SqlType,
    },
    InList {
        expr: Box<Expr>,
        list: Vec<Expr>,
        negated: bool,
    },
    Like {
        expr: Box<Expr>,
        pattern: Box<Expr>,
        negated: bool,
        case_insensitive: bool,
    },
    Case {
        operand: Option<Box<Expr>>,
        whens: Vec<(Expr, Expr)>,
        else_expr: Option<Box<Expr>>,
        ty: SqlType,
    },
    Func {
        name: String,
        args: Vec<Expr>,
        ty: SqlType,
    },
    Subquery {
        plan: SubPlan,
        kind: SubqueryKind,
        correlated: bool,
        outer_refs: Vec<(usize, SqlType)>,
        cache: Arc<SubqueryCache>,
        ty: SqlType,
    },
    /// An aggregate call, as bound in a select list or HAVING; the planner
    /// replaces it by its aggregate node's output column. Never evaluated.
    Agg(Box<AggCall>),
    /// A window function call, replaced by its window node's output column.
    Window(Box<WindowCall>),
}

impl Expr {
    pub fn lit(value: Value, ty: SqlType) -> Expr {
        Expr::Literal { value, ty }
    }

    /// A subquery over `plan` with a fresh (empty) result cache.
    pub fn subquery(plan: impl SubqueryPlan, kind: SubqueryKind, correlated: bool, outer_refs: Vec<(usize, SqlType)>, ty: SqlType) -> Expr {
        Expr::Subquery { plan: SubPlan::new(plan), kind, correlated, outer_refs, cache: Arc::new(SubqueryCache::default()), ty }
    }

    pub fn ty(&self) -> SqlType {
        match self {
            Expr::Column { ty, .. }
            | Expr::Outer { ty, .. }
            | Expr::Literal { ty, .. }
            | Expr::Param { ty, .. }
            | Expr::Binary { ty, .. }
            | Expr::Cast { ty, .. }
            | Expr::Case { ty, .. }
            | Expr::Func { ty, .. }
            | Expr::Subquery { ty, .. } => *ty,
            Expr::Agg(a) => a.ty,
            Expr::Window(w) => w.ty,
            Expr::Neg(e) => e.ty(),
            Expr::Not(_)
            | Expr::IsNull { .. }
            | Expr::IsBool { .. }
            | Expr::IsDistinct { .. }
            | Expr::InList { .. }
            | Expr::Like { .. } => SqlType::Bool,
        }
    }

    /// Rebuild the tree, letting `f` replace nodes (None = keep and recurse).
    pub fn map(&self, depth: usize, f: &dyn Fn(&Expr, usize) -> Option<Expr>) -> Expr {
        if let Some(e) = f(self, depth) {
            return e;
        }
        let b = |e: &Expr| Box::new(e.map(depth, f));
        match self {
            Expr::Column { .. } | Expr::Outer { .. } | Expr::Literal { .. } | Expr::Param { .. } => self.clone(),
            Expr::Binary { op, left, right, ty } => Expr::Binary { op: *op, left: b(left), right: b(right), ty: *ty },
            Expr::Not(e) => Expr::Not(b(e)),
            Expr::Neg(e) => Expr::Neg(b(e)),
            Expr::IsNull { expr, negated } => Expr::IsNull { expr: b(expr), negated: *negated },
            Expr::IsBool { expr, value, negated } => Expr::IsBool { expr: b(expr), value: *value, negated: *negated },
            Expr::IsDistinct { left, right, negated } => Expr::IsDistinct { left: b(left), right: b(right), negated: *negated },
            Expr::Cast { expr, ty } => Expr::Cast { expr: b(expr), ty: *ty },
            Expr::InList { expr, list, negated } => {
                Expr::InList { expr: b(expr), list: list.iter().map(|e| e.map(depth, f)).collect(), negated: *negated }
            }
            Expr::Like { expr, pattern, negated, case_insensitive } => {
                Expr::Like { expr: b(expr), pattern: b(pattern), negated: *negated, case_insensitive: *case_insensitive }
            }
            Expr::Case { operand, whens, else_expr, ty } => Expr::Case {
                operand: operand.as_ref().map(|e| b(e)),
                whens: whens.iter().map(|(w, t)| (w.map(depth, f), t.map(depth, f))).collect(),
                else_expr: else_expr.as_ref().map(|e| b(e)),
                ty: *ty,
            },
            Expr::Func { name, args, ty } => {
                Expr::Func { name: name.clone(), args: args.iter().map(|e| e.map(depth, f)).collect(), ty: *ty }
            }
            Expr::Subquery { plan, kind, correlated, outer_refs, cache: _, ty } => {
                let kind = match kind {
                    SubqueryKind::Scalar => SubqueryKind::Scalar,
                    SubqueryKind::Rows => SubqueryKind::Rows,
                    SubqueryKind::Array => SubqueryKind::Array,
                    SubqueryKind::Exists { negated } => SubqueryKind::Exists { negated: *negated },
                    SubqueryKind::In { expr, negated } => SubqueryKind::In { expr: b(expr), negated: *negated },
                    SubqueryKind::Quantified { expr, op, all } => SubqueryKind::Quantified { expr: b(expr), op: *op, all: *all },
                };
                Expr::Subquery {
                    plan: plan.0.map_plan_exprs(depth + 1, f),
                    kind,
                    correlated: *correlated,
                    outer_refs: outer_refs.clone(),
                    cache: Arc::new(SubqueryCache::default()),
                    ty: *ty,
                }
            }
            Expr::Agg(a) => Expr::Agg(Box::new(AggCall {
                func: a.func,
                args: a.args.iter().map(|e| e.map(depth, f)).collect(),
                distinct: a.distinct,
                filter: a.filter.as_ref().map(|e| e.map(depth, f)),
                ty: a.ty,
            })),
            Expr::Window(w) => Expr::Window(Box::new(WindowCall {
                func: w.func,
                args: w.args.iter().map(|e| e.map(depth, f)).collect(),
                partition_by: w.partition_by.iter().map(|e| e.map(depth, f)).collect(),
                order_by: w
                    .order_by
                    .iter()
                    .map(|k| SortKey { expr: k.expr.map(depth, f), desc: k.desc, nulls_first: k.nulls_first })
                    .collect(),
                frame: w.frame.map(|e| e.map(depth, f)),
                ty: w.ty,
            })),
        }
    }

    /// Visit every node (not descending into subquery plans).
    pub fn walk(&self, f: &mut dyn FnMut(&Expr)) {
        f(self);
        match self {
            Expr::Binary { left, right, .. } | Expr::IsDistinct { left, right, .. } => {
                left.walk(f);
                right.walk(f);
            }
            Expr::Not(e) | Expr::Neg(e) | Expr::IsNull { expr: e, .. } | Expr::IsBool { expr: e, .. } | Expr::Cast { expr: e, .. } => {
                e.walk(f)
            }
            Expr::InList { expr, list, .. } => {
                expr.walk(f);
                list.iter().for_each(|e| e.walk(f));
            }
            Expr::Like { expr, pattern, .. } => {
                expr.walk(f);
                pattern.walk(f);
            }
            Expr::Case { operand, whens, else_expr, .. } => {
                if let Some(o) = operand {
                    o.walk(f);
                }
                for (w, t) in whens {
                    w.walk(f);
                    t.walk(f);
                }
                if let Some(e) = else_expr {
                    e.walk(f);
                }
            }
            Expr::Func { args, .. } => args.iter().for_each(|e| e.walk(f)),
            Expr::Subquery { kind, .. } => match kind {
                SubqueryKind::In { expr, .. } | SubqueryKind::Quantified { expr, .. } => expr.walk(f),
                _ => {}
            },
            Expr::Agg(a) => {
                a.args.iter().for_each(|e| e.walk(f));
                if let Some(x) = &a.filter {
                    x.walk(f);
                }
            }
            Expr::Window(w) => {
                w.args.iter().for_each(|e| e.walk(f));
                w.partition_by.iter().for_each(|e| e.walk(f));
                w.order_by.iter().for_each(|k| k.expr.walk(f));
            }
            _ => {}
        }
    }

    /// Columns of the input this expression reads.
    pub fn columns_used(&self) -> Vec<usize> {
        let mut v = Vec::new();
        self.walk(&mut |e| {
            if let Expr::Column { index, .. } = e {
                v.push(*index);
            }
        });
        v.sort_unstable();
        v.dedup();
        v
    }

    pub fn has_subquery(&self) -> bool {
        let mut found = false;
        self.walk(&mut |e| {
            if matches!(e, Expr::Subquery { .. }) {
                found = true;
            }
        });
        found
    }

    /// Renumber input columns through `map` (old index → new index).
    pub fn remap_columns(&self, map: &dyn Fn(usize) -> usize) -> Expr {
        self.map(0, &|e, d| match e {
            Expr::Column { index, ty } if d == 0 => Some(Expr::Column { index: map(*index), ty: *ty }),
            _ => None,
        })
    }

    /// A constant expression (no columns, params resolved, no subqueries).
    pub fn is_constant(&self) -> bool {
        let mut c = true;
        self.walk(&mut |e| {
            if matches!(
                e,
                Expr::Column { .. } | Expr::Outer { .. } | Expr::Param { .. } | Expr::Subquery { .. } | Expr::Agg(_) | Expr::Window(_)
            ) {
                c = false;
            }
            if let Expr::Func { name, .. } = e {
                // Volatile functions (random(), clock_timestamp()) are never
                // folded; stable ones are constant within the statement.
                let v = super::functions::registry().volatility(name);
                if v == Some(super::functions::registry::Volatility::Volatile) {
                    c = false;
                }
            }
        });
        c
    }

    /// Evaluate over a batch, producing an array of `batch.num_rows()`.
    pub fn eval(&self, batch: &RecordBatch, ctx: &ExecCtx) -> Result<ArrayRef> {
        let n = batch.num_rows();
        match self {
            Expr::Column { index, .. } => Ok(batch.column(*index).clone()),
            Expr::Literal { value, ty } => {
                // A literal becomes n copies: a large folded constant
                // (repeat('x', 1000000)) is charged before it is copied.
                if let Value::Text(s) = value {
                    ctx.check_alloc(s.len().saturating_mul(n), "a constant's copies")?;
                }
                scalar_array(value, *ty, n)
            }
            Expr::Outer { .. } => bail!(Internal, "outer reference evaluated outside its subquery"),
            Expr::Param { index, .. } => bail!(Internal, "parameter ${} was not bound", index + 1),
            Expr::Binary { op, left, right, ty } => eval_binary(*op, left, right, *ty, batch, ctx),
            Expr::Not(e) => {
                let a = e.eval(batch, ctx)?;
                Ok(Arc::new(boolean::not(a.as_boolean())?))
            }
            Expr::Neg(e) => {
                let a = e.eval(batch, ctx)?;
                if e.ty() == SqlType::Interval {
                    return super::functions::temporal::negate_interval(a.as_ref());
                }
                if e.ty() == SqlType::Numeric {
                    return super::numeric::neg(a.as_ref());
                }
                Ok(numeric::neg(&a).map_err(overflow(e.ty()))?)
            }
            Expr::IsNull { expr, negated } => {
                let a = expr.eval(batch, ctx)?;
                Ok(Arc::new(if *negated { arrow::compute::is_not_null(&a)? } else { arrow::compute::is_null(&a)? }))
            }
            Expr::IsBool { expr, value, negated } => {
                let a = expr.eval(batch, ctx)?;
                let a = a.as_boolean();
                let r: BooleanArray = a.iter().map(|v| Some((v == Some(*value)) != *negated)).collect();
                Ok(Arc::new(r))
            }
            Expr::IsDistinct { left, right, negated } => {
                let l = comparable_form(left.eval(batch, ctx)?, left.ty())?;
                let r = comparable_form(right.eval(batch, ctx)?, right.ty())?;
                let d = cmp::distinct(&l, &r)?;
                Ok(Arc::new(if *negated { boolean::not(&d)? } else { d }))
            }
            Expr::Cast { expr, ty } => {
                let a = expr.eval(batch, ctx)?;
                cast_array(&a, expr.ty(), *ty)
            }
            Expr::InList { expr, list, negated } => eval_in_list(expr, list, *negated, batch, ctx),
            Expr::Like { expr, pattern, negated, case_insensitive } => {
                let a = expr.eval(batch, ctx)?;
                let p = pattern.eval(batch, ctx)?;
                let a = cast_with_options(&a, &DataType::Utf8, &CastOptions::default())?;
                let p = cast_with_options(&p, &DataType::Utf8, &CastOptions::default())?;
                use arrow::compute::kernels::comparison as c;
                let r = match (*negated, *case_insensitive) {
                    (false, false) => c::like(&a, &p)?,
                    (true, false) => c::nlike(&a, &p)?,
                    (false, true) => c::ilike(&a, &p)?,
                    (true, true) => c::nilike(&a, &p)?,
                };
                Ok(Arc::new(r))
            }
            Expr::Case { operand, whens, else_expr, ty } => eval_case(operand.as_deref(), whens, else_expr.as_deref(), *ty, batch, ctx),
            Expr::Func { name, args, ty } => super::functions::eval_function(name, args, *ty, batch, ctx),
            Expr::Subquery { .. } => eval_subquery(self, batch, ctx),
            Expr::Agg(_) | Expr::Window(_) => bail!(Internal, "aggregate or window call evaluated outside its plan node"),
        }
    }
}

/// The form of an array that arrow's comparison kernels order as
/// PostgreSQL does: intervals become their 30-day-month value, numerics
/// their value's sort key.
pub fn comparable_form(a: ArrayRef, ty: SqlType) -> Result<ArrayRef> {
    if ty == SqlType::Interval {
        return super::functions::temporal::interval_cmp_keys(a.as_ref());
    }
    if ty == SqlType::Numeric {
        return super::numeric::sort_keys(a.as_ref());
    }
    Ok(a)
}

/// An array of `n` copies of a value.
pub fn scalar_array(value: &Value, ty: SqlType, n: usize) -> Result<ArrayRef> {
    let one = values_to_array(std::slice::from_ref(value), ty)?;
    if n == 1 {
        return Ok(one);
    }
    let idx = UInt32Array::from(vec![0u32; n]);
    Ok(take(&one, &idx, None)?)
}

/// Evaluate `expr` only on rows where `mask` is true; other rows get NULL.
pub fn eval_masked(expr: &Expr, batch: &RecordBatch, mask: &BooleanArray, ctx: &ExecCtx) -> Result<ArrayRef> {
    let n = batch.num_rows();
    let selected = mask.true_count();
    if selected == n && mask.null_count() == 0 {
        return expr.eval(batch, ctx);
    }
    if selected == 0 {
        return Ok(new_null_array(&expr.ty().to_arrow(), n));
    }
    let sub = arrow::compute::filter_record_batch(batch, mask)?;
    let vals = expr.eval(&sub, ctx)?;
    // Scatter back: row i takes vals[k] where k counts selected rows.
    let mut k = 0u32;
    let idx: UInt32Array = (0..n)
        .map(|i| {
            if mask.is_valid(i) && mask.value(i) {
                k += 1;
                Some(k - 1)
            } else {
                None
            }
        })
        .collect();
    Ok(take(&vals, &idx, None)?)
}

/// A comparison of a column with constants of its own type (`=`, `<`,
/// …, `IN (…)`) over types whose comparison cannot raise an error: safe
/// to evaluate on rows an AND / OR has already decided.
fn cheap_and_safe(e: &Expr) -> bool {
    let plain = |t: SqlType| {
        t.is_integer()
            || t.is_timestamp()
            || matches!(t, SqlType::Float4 | SqlType::Float8 | SqlType::Text | SqlType::Varchar | SqlType::Date | SqlType::Bool)
    };
    let operand = |x: &Expr| matches!(x, Expr::Column { .. } | Expr::Literal { .. }) && plain(x.ty());
    match e {
        Expr::Binary { op, left, right, .. } => op.is_comparison() && operand(left) && operand(right) && left.ty() == right.ty(),
        Expr::InList { expr, list, .. } => {
            matches!(expr.as_ref(), Expr::Column { .. })
                && plain(expr.ty())
                && list.iter().all(|x| matches!(x, Expr::Literal { .. }) && x.ty() == expr.ty())
        }
        _ => false,
    }
}

fn eval_binary(op: BinOp, left: &Expr, right: &Expr, ty: SqlType, batch: &RecordBatch, ctx: &ExecCtx) -> Result<ArrayRef> {
    match op {
        BinOp::And | BinOp::Or => {
            let l = left.eval(batch, ctx)?;
            let lb = l.as_boolean();
            let r = if cheap_and_safe(right) {
                // A comparison of a column with a constant cannot fail:
                // over every row it costs less than selecting the rows.
                right.eval(batch, ctx)?
            } else {
                // Right side only where the left does not decide (a word
                // at a time: AND needs true or NULL, OR false or NULL).
                let v = lb.values();
                let need = match (op, lb.nulls()) {
                    (BinOp::And, None) => v.clone(),
                    (BinOp::And, Some(nb)) => v | &!nb.inner(),
                    (_, None) => !v,
                    (_, Some(nb)) => &!v | &!nb.inner(),
                };
                eval_masked(right, batch, &BooleanArray::new(need, None), ctx)?
            };
            let rb = r.as_boolean();
            let out = if op == BinOp::And { boolean::and_kleene(lb, rb)? } else { boolean::or_kleene(lb, rb)? };
            return Ok(Arc::new(out));
        }
        _ => {}
    }
    // A literal operand goes to the kernel as a scalar: no array of n
    // copies per batch (the common `col op constant` case).
    let scalar_ok = (op.is_comparison() || matches!(op, BinOp::Add | BinOp::Sub | BinOp::Mul))
        && !left.ty().is_timestamp()
        && left.ty() != SqlType::Date
        && left.ty() != SqlType::Interval
        && left.ty() != SqlType::Numeric;
    if scalar_ok && batch.num_rows() > 1 {
        if let Expr::Literal { value, ty: lt } = right {
            let l = left.eval(batch, ctx)?;
            let one = values_to_array(std::slice::from_ref(value), *lt)?;
            if one.data_type() == l.data_type() {
                let (l, one) = comparable(op, l, one);
                return scalar_binary(op, &l, &Scalar::new(one), false, ty);
            }
        }
        if let Expr::Literal { value, ty: lt } = left {
            let r = right.eval(batch, ctx)?;
            let one = values_to_array(std::slice::from_ref(value), *lt)?;
            if one.data_type() == r.data_type() {
                let (r, one) = comparable(op, r, one);
                return scalar_binary(op, &r, &Scalar::new(one), true, ty);
            }
        }
    }
    if (left.ty().is_timestamp() || left.ty() == SqlType::Date) && op.is_comparison() && batch.num_rows() > 1 {
        if let Expr::Literal { value, ty: lt } = right {
            let l = left.eval(batch, ctx)?;
            let one = values_to_array(std::slice::from_ref(value), *lt)?;
            if one.data_type() == l.data_type() {
                let (l, one) = comparable(op, l, one);
                return scalar_binary(op, &l, &Scalar::new(one), false, ty);
            }
        }
    }
    let l = left.eval(batch, ctx)?;
    let r = right.eval(batch, ctx)?;
    if op == BinOp::Concat {
        let bytes = super::memory::array_bytes(l.as_ref()) + super::memory::array_bytes(r.as_ref());
        ctx.check_alloc(bytes, "||")?;
    }
    binary_arrays(op, &l, &r, left.ty(), ty)
}

/// Operands of a comparison as PostgreSQL compares floats (-0 = 0, every
/// NaN equal and above all numbers); arrow's kernels order floats totally.
fn comparable(op: BinOp, l: ArrayRef, r: ArrayRef) -> (ArrayRef, ArrayRef) {
    if op.is_comparison() {
        (super::keys::normalize_key(&l), super::keys::normalize_key(&r))
    } else {
        (l, r)
    }
}

/// `array op scalar` (or `scalar op array` when `flipped`).
fn scalar_binary(op: BinOp, a: &ArrayRef, s: &Scalar<ArrayRef>, flipped: bool, result_ty: SqlType) -> Result<ArrayRef> {
    let a: &dyn Array = a.as_ref();
    macro_rules! both {
        ($f:expr) => {
            if flipped {
                $f(s, &a)
            } else {
                $f(&a, s)
            }
        };
    }
    if result_ty.is_float() && matches!(op, BinOp::Add | BinOp::Sub | BinOp::Mul) {
        let out = match op {
            BinOp::Add => both!(numeric::add)?,
            BinOp::Sub => both!(numeric::sub)?,
            _ => both!(numeric::mul)?,
        };
        let (af, sf) = (as_f64(a)?, as_f64(s.get().0)?);
        let (lf, rf) = if flipped { (&sf, &af) } else { (&af, &sf) };
        float_check(op, lf, rf, out.as_ref())?;
        return Ok(out);
    }
    Ok(match op {
        BinOp::Add => both!(numeric::add).map_err(overflow(result_ty))?,
        BinOp::Sub => both!(numeric::sub).map_err(overflow(result_ty))?,
        BinOp::Mul => both!(numeric::mul).map_err(overflow(result_ty))?,
        BinOp::Eq => Arc::new(both!(cmp::eq)?),
        BinOp::NotEq => Arc::new(both!(cmp::neq)?),
        BinOp::Lt => Arc::new(both!(cmp::lt)?),
        BinOp::LtEq => Arc::new(both!(cmp::lt_eq)?),
        BinOp::Gt => Arc::new(both!(cmp::gt)?),
        BinOp::GtEq => Arc::new(both!(cmp::gt_eq)?),
        _ => unreachable!("only arithmetic and comparisons take the scalar path"),
    })
}

/// Apply a binary operator to two arrays of the same type.
pub fn binary_arrays(op: BinOp, l: &ArrayRef, r: &ArrayRef, operand_ty: SqlType, result_ty: SqlType) -> Result<ArrayRef> {
    use super::functions::temporal;
    if operand_ty == SqlType::Numeric && op != BinOp::Concat {
        if op.is_comparison() {
            let (lk, rk) = (super::numeric::sort_keys(l.as_ref())?, super::numeric::sort_keys(r.as_ref())?);
            return binary_arrays(op, &lk, &rk, SqlType::Unknown, result_ty);
        }
        return super::numeric::arith(op, l.as_ref(), r.as_ref());
    }
    let (l, r) = comparable(op, l.clone(), r.clone());
    let l: &dyn Array = l.as_ref();
    let r: &dyn Array = r.as_ref();
    let arith = matches!(op, BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div);
    if arith && temporal::is_temporal(l.data_type(), r.data_type()) {
        let sym = match op {
            BinOp::Add => '+',
            BinOp::Sub => '-',
            BinOp::Mul => '*',
            _ => '/',
        };
        return temporal::arith(sym, l, r);
    }
    // Intervals compare as PostgreSQL does: 30-day months, 24-hour days.
    if op.is_comparison() && operand_ty == SqlType::Interval {
        let lk = temporal::interval_cmp_keys(l)?;
        let rk = temporal::interval_cmp_keys(r)?;
        return binary_arrays(op, &lk, &rk, SqlType::Int8, result_ty);
    }
    if arith && operand_ty.is_float() {
        return float_arith(op, l, r);
    }
    Ok(match op {
        BinOp::Add => numeric::add(&l, &r).map_err(overflow(result_ty))?,
        BinOp::Sub => numeric::sub(&l, &r).map_err(overflow(result_ty))?,
        BinOp::Mul => numeric::mul(&l, &r).map_err(overflow(result_ty))?,
        BinOp::Div | BinOp::Mod => {
            if operand_ty.is_float() {
                let rf = cast_with_options(r, &DataType::Float64, &CastOptions::default())?;
                if rf.as_primitive::<Float64Type>().iter().any(|v| v == Some(0.0)) {
                    bail!(DivisionByZero, "division by zero");
                }
            }
            if op == BinOp::Div {
                numeric::div(&l, &r).map_err(overflow(result_ty))?
            } else {
                numeric::rem(&l, &r).map_err(overflow(result_ty))?
            }
        }
        BinOp::Eq => Arc::new(cmp::eq(&l, &r)?),
        BinOp::NotEq => Arc::new(cmp::neq(&l, &r)?),
        BinOp::Lt => Arc::new(cmp::lt(&l, &r)?),
        BinOp::LtEq => Arc::new(cmp::lt_eq(&l, &r)?),
        BinOp::Gt => Arc::new(cmp::gt(&l, &r)?),
        BinOp::GtEq => Arc::new(cmp::gt_eq(&l, &r)?),
        BinOp::Concat => {
            let l = cast_array(&make_ref(l), operand_ty, SqlType::Text)?;
            let r = cast_array(&make_ref(r), operand_ty, SqlType::Text)?;
            let (l, r) = (l.as_string::<i32>(), r.as_string::<i32>());
            let mut total = 0usize;
            for (a, b) in l.iter().zip(r.iter()) {
                if let (Some(a), Some(b)) = (a, b) {
                    super::memory::check_value_bytes(a.len() + b.len())?;
                    total += a.len() + b.len();
                }
            }
            if total > i32::MAX as usize {
                bail!(ProgramLimitExceeded, "requested length too large");
            }
            let out: StringArray = l.iter().zip(r.iter()).map(|(a, b)| Some(format!("{}{}", a?, b?))).collect();
            Arc::new(out)
        }
        BinOp::And | BinOp::Or => unreachable!("handled by eval_binary"),
    })
}

fn make_ref(a: &dyn Array) -> ArrayRef {
    make_array(a.to_data())
}

/// `+ - * /` of two float columns (same width) with PostgreSQL's checks
/// (float.h): a finite pair giving infinity is `value out of range:
/// overflow`, a product or quotient of non-zero values giving zero is
/// `underflow`, a zero divisor is `division by zero` unless the dividend is
/// NaN (NaN / 0 is NaN).
fn float_arith(op: BinOp, l: &dyn Array, r: &dyn Array) -> Result<ArrayRef> {
    let (lf, rf) = (as_f64(l)?, as_f64(r)?);
    let at = |a: &Float64Array, i: usize| if a.len() == 1 { 0 } else { i };
    if op == BinOp::Div || op == BinOp::Mod {
        for i in 0..lf.len().max(rf.len()) {
            let (li, ri) = (at(&lf, i), at(&rf, i));
            if lf.is_valid(li) && rf.is_valid(ri) && rf.value(ri) == 0.0 && !lf.value(li).is_nan() {
                bail!(DivisionByZero, "division by zero");
            }
        }
    }
    let out: ArrayRef = match op {
        BinOp::Add => numeric::add(&l, &r)?,
        BinOp::Sub => numeric::sub(&l, &r)?,
        BinOp::Mul => numeric::mul(&l, &r)?,
        BinOp::Div => numeric::div(&l, &r)?,
        _ => numeric::rem(&l, &r)?,
    };
    float_check(op, &lf, &rf, out.as_ref())?;
    Ok(out)
}

fn as_f64(a: &dyn Array) -> Result<Float64Array> {
    Ok(cast_with_options(a, &DataType::Float64, &CastOptions::default())?.as_primitive::<Float64Type>().clone())
}

/// The overflow and underflow checks of float.h on `out = l op r` (either
/// operand may be a single value).
fn float_check(op: BinOp, lf: &Float64Array, rf: &Float64Array, out: &dyn Array) -> Result<()> {
    let of = as_f64(out)?;
    let at = |a: &Float64Array, i: usize| if a.len() == 1 { a.value(0) } else { a.value(i) };
    for i in (0..of.len()).filter(|&i| of.is_valid(i)) {
        let (a, b, v) = (at(lf, i), at(rf, i), of.value(i));
        if v.is_infinite() && a.is_finite() && b.is_finite() {
            bail!(NumericOutOfRange, "value out of range: overflow");
        }
        let underflow = match op {
            BinOp::Mul => v == 0.0 && a != 0.0 && b != 0.0,
            BinOp::Div => v == 0.0 && a != 0.0 && !b.is_infinite(),
            _ => false,
        };
        if underflow {
            bail!(NumericOutOfRange, "value out of range: underflow");
        }
    }
    Ok(())
}

fn overflow(ty: SqlType) -> impl Fn(arrow::error::ArrowError) -> crate::error::WeirError {
    move |e| match e {
        arrow::error::ArrowError::ArithmeticOverflow(_) => {
            let what = match ty {
                SqlType::Int2 => "smallint",
                SqlType::Int4 => "integer",
                SqlType::Int8 => "bigint",
                _ => "value",
            };
            err!(NumericOutOfRange, "{what} out of range")
        }
        other => other.into(),
    }
}

fn eval_in_list(expr: &Expr, list: &[Expr], negated: bool, batch: &RecordBatch, ctx: &ExecCtx) -> Result<ArrayRef> {
    let mut a = expr.eval(batch, ctx)?;
    let n = batch.num_rows();
    // Intervals compare by their 30-day-month value, numerics by value.
    let interval = matches!(expr.ty(), SqlType::Interval | SqlType::Numeric);
    if interval {
        a = comparable_form(a, expr.ty())?;
    }
    if let Some(r) = in_text_set(&a, list) {
        return Ok(Arc::new(if negated { boolean::not(&r)? } else { r }));
    }
    // acc = OR of equalities with SQL three-valued logic.
    let mut acc = BooleanArray::from(vec![false; n]);
    for item in list {
        // A constant item is compared as a scalar, not as n copies.
        if let (Expr::Literal { value, ty: lt }, false, true) = (item, interval, n > 1) {
            let one = values_to_array(std::slice::from_ref(value), *lt)?;
            if one.data_type() == a.data_type() {
                acc = boolean::or_kleene(&acc, &cmp::eq(&a, &Scalar::new(one))?)?;
                continue;
            }
        }
        let mut v = item.eval(batch, ctx)?;
        if interval {
            v = comparable_form(v, expr.ty())?;
        }
        let eq = cmp::eq(&a, &v)?;
        acc = boolean::or_kleene(&acc, &eq)?;
    }
    Ok(Arc::new(if negated { boolean::not(&acc)? } else { acc }))
}

/// `text IN (constants)` in one pass over the strings with a set (tag
/// IN-lists: `hostname IN ('host_1', …)`); a run of one string is looked
/// up once. None when the column is not text or an item not a constant.
fn in_text_set(a: &ArrayRef, list: &[Expr]) -> Option<BooleanArray> {
    if a.data_type() != &DataType::Utf8 || list.len() < 2 {
        return None;
    }
    let mut set = std::collections::HashSet::with_capacity(list.len());
    let mut has_null = false;
    for item in list {
        match item {
            Expr::Literal { value: Value::Text(s), ty } if ty.to_arrow() == DataType::Utf8 => {
                set.insert(s.as_str());
            }
            Expr::Literal { value: Value::Null, .. } => has_null = true,
            _ => return None,
        }
    }
    let s = a.as_string::<i32>();
    let mut prev: Option<(&str, bool)> = None;
    // Not found: false, or NULL when the list holds a NULL.
    let miss = if has_null { None } else { Some(false) };
    Some(
        (0..s.len())
            .map(|i| {
                if s.is_null(i) {
                    return None;
                }
                let v = s.value(i);
                let hit = match prev {
                    Some((p, h)) if p == v => h,
                    _ => {
                        let h = set.contains(v);
                        prev = Some((v, h));
                        h
                    }
                };
                if hit {
                    Some(true)
                } else {
                    miss
                }
            })
            .collect(),
    )
}

fn eval_case(
    operand: Option<&Expr>,
    whens: &[(Expr, Expr)],
    else_expr: Option<&Expr>,
    ty: SqlType,
    batch: &RecordBatch,
    ctx: &ExecCtx,
) -> Result<ArrayRef> {
    let n = batch.num_rows();
    let op_val = operand.map(|o| o.eval(batch, ctx)).transpose()?;
    // Rows not yet decided by an earlier WHEN.
    let mut remaining = BooleanArray::from(vec![true; n]);
    let mut result = new_null_array(&ty.to_arrow(), n);
    for (cond, then) in whens {
        if remaining.true_count() == 0 {
            break;
        }
        let c = eval_masked(cond, batch, &remaining, ctx)?;
        let c = match &op_val {
            Some(o) => {
                let ot = operand.map(|o| o.ty()).unwrap_or(SqlType::Unknown);
                let eq = cmp::eq(&comparable_form(o.clone(), ot)?, &comparable_form(c, ot)?)?;
                Arc::new(eq) as ArrayRef
            }
            None => c,
        };
        let c = c.as_boolean();
        // hit = remaining AND c is true
        let hit: BooleanArray = remaining.iter().zip(c.iter()).map(|(r, c)| Some(r == Some(true) && c == Some(true))).collect();
        if hit.true_count() > 0 {
            let t = eval_masked(then, batch, &hit, ctx)?;
            let t = cast_array(&t, then.ty(), ty)?;
            result = arrow::compute::kernels::zip::zip(&hit, &t, &result)?;
        }
        remaining = boolean::and(&remaining, &boolean::not(&hit)?)?;
    }
    if let Some(e) = else_expr {
        if remaining.true_count() > 0 {
            let t = eval_masked(e, batch, &remaining, ctx)?;
            let t = cast_array(&t, e.ty(), ty)?;
            result = arrow::compute::kernels::zip::zip(&remaining, &t, &result)?;
        }
    }
    Ok(result)
}

/// A text column (arrays are text in batches) parsed value by value with
/// PostgreSQL's input rules for `to`.
fn parse_text_column(a: &ArrayRef, to: SqlType) -> Result<ArrayRef> {
    let s = a.as_string::<i32>();
    let mut vals = Vec::with_capacity(s.len());
    for v in s.iter() {
        vals.push(match v {
            None => Value::Null,
            Some(t) => parse_text_as(t, to)?,
        });
    }
    values_to_array(&vals, to)
}

/// The same bits as another arrow type of their width (PostgreSQL's binary
/// coercion: `CREATE CAST … WITHOUT FUNCTION`).
fn relabel(a: &ArrayRef, target: DataType) -> Result<ArrayRef> {
    if a.data_type() == &target {
        return Ok(a.clone());
    }
    if a.data_type() == &DataType::Null {
        return Ok(new_null_array(&target, a.len()));
    }
    let width = a.data_type().primitive_width();
    if width.is_none() || width != target.primitive_width() {
        bail!(CannotCoerce, "cannot reinterpret {} as {}", a.data_type(), target);
    }
    let data = a.to_data().into_builder().data_type(target).build()?;
    Ok(make_array(data))
}

/// Cast between SQL types with PostgreSQL's rules and error codes.
pub fn cast_array(a: &ArrayRef, from: SqlType, to: SqlType) -> Result<ArrayRef> {
    // A base type (`SqlType::Base`): text in and out through its
    // representation; any other cast to or from it keeps the bits (the
    // binder makes one only for `CREATE CAST … WITHOUT FUNCTION`).
    if from.is_base() || to.is_base() {
        if from == SqlType::Unknown || from.is_text() {
            return cast_array(a, from, to.physical());
        }
        if to.is_text() {
            return cast_array(a, from.physical(), to);
        }
        return relabel(a, to.to_arrow());
    }
    if to == SqlType::Oid && from == SqlType::Int8 {
        // i8tooid: an oid is unsigned 32-bit.
        if a.as_primitive_opt::<Int64Type>().is_some_and(|i| i.iter().flatten().any(|v| !(0..=u32::MAX as i64).contains(&v))) {
            bail!(NumericOutOfRange, "OID out of range");
        }
    }
    let target = to.to_arrow();
    // Arrays are text in batches: a cast to another array type (or from
    // text) parses and re-forms each value; nothing else casts to an array.
    if to.is_array() && from != to && a.data_type() != &DataType::Null {
        if !(from.is_text() || from.is_array()) {
            bail!(CannotCoerce, "cannot cast type {} to {}", from.pg_name(), to.pg_name());
        }
        return parse_text_column(a, to);
    }
    if from.is_array() && !to.is_text() && !to.is_array() && to != SqlType::Unknown {
        bail!(CannotCoerce, "cannot cast type {} to {}", from.pg_name(), to.pg_name());
    }
    // bytea is its canonical hex text in batches: text input is parsed
    // (byteain); bytea to text is that text; nothing else casts either way.
    if to == SqlType::Bytea && from != SqlType::Bytea && a.data_type() != &DataType::Null {
        if !from.is_text() {
            bail!(CannotCoerce, "cannot cast type {} to {}", from.pg_name(), to.pg_name());
        }
        return parse_text_column(a, to);
    }
    // Geometric values are their canonical text: text input is parsed
    // (point_in …); to text is that text; nothing else casts either way.
    if matches!(to, SqlType::Geo(_)) && from != to && a.data_type() != &DataType::Null {
        if !from.is_text() {
            bail!(CannotCoerce, "cannot cast type {} to {}", from.pg_name(), to.pg_name());
        }
        return parse_text_column(a, to);
    }
    if matches!(from, SqlType::Geo(_)) && !to.is_text() && to != from && to != SqlType::Unknown {
        bail!(CannotCoerce, "cannot cast type {} to {}", from.pg_name(), to.pg_name());
    }
    if from == SqlType::Bytea && !to.is_text() && to != SqlType::Bytea && to != SqlType::Unknown {
        bail!(CannotCoerce, "cannot cast type {} to {}", from.pg_name(), to.pg_name());
    }
    if (from == SqlType::Numeric || to == SqlType::Numeric) && from != to && a.data_type() != &DataType::Null {
        return super::numeric::cast(a, from, to);
    }
    if a.data_type() == &target {
        return Ok(a.clone());
    }
    if a.data_type() == &DataType::Null {
        return Ok(new_null_array(&target, a.len()));
    }
    // Text to anything: parse each value with PostgreSQL's input rules.
    if from.is_text() || a.data_type() == &DataType::Utf8 {
        if to.is_text() {
            return Ok(a.clone());
        }
        return parse_text_column(a, to);
    }
    // Anything to text: PostgreSQL's output format (bool casts spell it out).
    if to.is_text() && from == SqlType::Bool {
        let out: StringArray = a.as_boolean().iter().map(|v| v.map(|b| if b { "true" } else { "false" })).collect();
        return Ok(Arc::new(out));
    }
    if to.is_text() {
        let tz = from == SqlType::TimestampTz;
        let out: StringArray = (0..a.len())
            .map(|i| {
                let v = value_at(a.as_ref(), i);
                if v.is_null() {
                    None
                } else if let (true, Value::Timestamp(t)) = (tz, &v) {
                    Some(crate::types::format_timestamptz(*t))
                } else {
                    Some(format_value(&v))
                }
            })
            .collect();
        return Ok(Arc::new(out));
    }
    // Float to integer rounds (half away from zero is close enough to rint here).
    if from.is_float() && to.is_integer() {
        let f = cast_with_options(a, &DataType::Float64, &CastOptions::default())?;
        let f = f.as_primitive::<Float64Type>();
        let rounded: Float64Array = f.unary(|x| x.round_ties_even());
        return int_cast(&(Arc::new(rounded) as ArrayRef), to);
    }
    if to.is_integer() && from.is_integer() {
        return int_cast(a, to);
    }
    if to == SqlType::Bool && from.is_integer() {
        let i = cast_with_options(a, &DataType::Int64, &CastOptions::default())?;
        let out: BooleanArray = i.as_primitive::<Int64Type>().iter().map(|v| v.map(|x| x != 0)).collect();
        return Ok(Arc::new(out));
    }
    let zone = crate::types::zone::current().zone;
    if zone != crate::types::zone::Zone::UTC {
        // timestamptz <-> timestamp go through the session's zone.
        let finite = |t: i64, f: &dyn Fn(i64) -> i64| if t == i64::MAX || t == i64::MIN { t } else { f(t) };
        match (from, to) {
            (SqlType::TimestampTz, SqlType::Timestamp) => {
                let ts = a.as_primitive::<TimestampMicrosecondType>();
                return Ok(Arc::new(ts.unary::<_, TimestampMicrosecondType>(|t| finite(t, &|t| zone.to_local(t)))));
            }
            (SqlType::Timestamp, SqlType::TimestampTz) => {
                let ts = a.as_primitive::<TimestampMicrosecondType>();
                let out: TimestampMicrosecondArray = ts.unary(|t| finite(t, &|t| zone.to_utc(t)));
                return Ok(Arc::new(out.with_timezone(crate::types::UTC)));
            }
            _ => {}
        }
    }
    // date <-> timestamp(tz): infinities map to infinities; a timestamptz's
    // day is its day in the session's zone.
    let local = |t: i64| if from == SqlType::TimestampTz { zone.to_local(t) } else { t };
    let utc = |t: i64| if to == SqlType::TimestampTz { zone.to_utc(t) } else { t };
    if from.is_timestamp() && to == SqlType::Date {
        let ts = a.as_primitive::<TimestampMicrosecondType>();
        let out: Date32Array = ts.try_unary(|t| match t {
            i64::MAX => Ok(i32::MAX),
            i64::MIN => Ok(i32::MIN),
            t => i32::try_from(local(t).div_euclid(crate::types::interval::USECS_PER_DAY))
                .map_err(|_| err!(DatetimeFieldOverflow, "date out of range for timestamp")),
        })?;
        return Ok(Arc::new(out));
    }
    if from == SqlType::Date && to.is_timestamp() {
        let d = a.as_primitive::<Date32Type>();
        let out: TimestampMicrosecondArray = d.try_unary(|d| match d {
            i32::MAX => Ok(i64::MAX),
            i32::MIN => Ok(i64::MIN),
            d => (d as i64)
                .checked_mul(crate::types::interval::USECS_PER_DAY)
                .map(utc)
                .ok_or_else(|| err!(DatetimeFieldOverflow, "date out of range for timestamp")),
        })?;
        return Ok(Arc::new(out.with_timezone_opt((to == SqlType::TimestampTz).then_some(crate::types::UTC))));
    }
    if from.is_timestamp() && to.is_timestamp() {
        return Ok(cast_with_options(a, &target, &CastOptions { safe: false, ..Default::default() })?);
    }
    if let Some(r) = cast_time(a, from, to) {
        return r;
    }
    if matches!(from, SqlType::Time | SqlType::TimeTz) || matches!(to, SqlType::Time | SqlType::TimeTz) {
        bail!(CannotCoerce, "cannot cast type {} to {}", from.pg_name(), to.pg_name());
    }
    if from == SqlType::Interval || to == SqlType::Interval {
        bail!(FeatureNotSupported, "cannot cast type {} to {}", from.pg_name(), to.pg_name());
    }
    // dtof: a finite double beyond real's range overflows, a non-zero one
    // that rounds to zero underflows.
    if from == SqlType::Float8 && to == SqlType::Float4 {
        let f = a.as_primitive::<Float64Type>();
        for v in f.iter().flatten() {
            let r = v as f32;
            if r.is_infinite() && v.is_finite() {
                bail!(NumericOutOfRange, "value out of range: overflow");
            }
            if r == 0.0 && v != 0.0 {
                bail!(NumericOutOfRange, "value out of range: underflow");
            }
        }
    }
    if from.is_timestamp() || to.is_timestamp() {
        if !(from.is_numeric() || to.is_numeric()) || from.is_timestamp() && to.is_numeric() {
            bail!(FeatureNotSupported, "cannot cast type {} to {}", from.pg_name(), to.pg_name());
        }
        if from.is_numeric() && to.is_timestamp() {
            bail!(DatatypeMismatch, "cannot cast type {} to {}", from.pg_name(), to.pg_name());
        }
    }
    cast_with_options(a, &target, &CastOptions { safe: false, ..Default::default() }).map_err(|e| match e {
        arrow::error::ArrowError::CastError(_) => err!(NumericOutOfRange, "{} out of range", to.pg_name()),
        other => other.into(),
    })
}

fn int_cast(a: &ArrayRef, to: SqlType) -> Result<ArrayRef> {
    cast_with_options(a, &to.to_arrow(), &CastOptions { safe: false, ..Default::default() }).map_err(|_| {
        let what = match to {
            SqlType::Int2 => "smallint",
            SqlType::Int4 => "integer",
            _ => "bigint",
        };
        err!(NumericOutOfRange, "{what} out of range")
    })
}

/// timestamp_in / timestamptz_in: PostgreSQL's free-form input, read in
/// the session's DateStyle order; a timestamptz without a zone in the input
/// is wall-clock time in the session's zone, a timestamp ignores any zone.
fn parse_timestamp_text(t: &str, tz: bool) -> Result<i64> {
    use crate::types::datetime_input::DateInputError as E;
    let ty = if tz { "timestamp with time zone" } else { "timestamp without time zone" };
    let ctx = crate::types::zone::current();
    let s = t.trim();
    let now = crate::types::zone::now_override().unwrap_or_else(crate::exec::functions::now_micros);
    match s.to_ascii_lowercase().as_str() {
        "now" => return Ok(if tz { now } else { ctx.zone.to_local(now) }),
        "epoch" => return Ok(0),
        "infinity" | "+infinity" => return Ok(i64::MAX),
        "-infinity" => return Ok(i64::MIN),
        _ => {}
    }
    let today = ctx.zone.to_local(now).div_euclid(86_400_000_000) as i32;
    // PostgreSQL's first timestamp is Julian day 0 (4714-11-24 BC). Its end,
    // 294277-01-01, is past i64 microseconds counted from 1970 (weir's epoch;
    // PostgreSQL counts from 2000): weir ends at the same count, in 294247,
    // below i64::MAX, which is `infinity`.
    const MIN_US: i64 = -2_440_588 * 86_400_000_000;
    const END_US: i64 = 9_223_371_331_200_000_000;
    let out_of_range = || err!(DatetimeFieldOverflow, "timestamp out of range: \"{t}\"");
    match crate::types::datetime_input::parse_timestamp_pg(s, ctx.order, today) {
        Ok((local, zone)) if tz => match zone.unwrap_or(ctx.zone).to_utc(local) {
            us if !(MIN_US..END_US).contains(&us) => Err(out_of_range()),
            us => Ok(us),
        },
        Ok((local, _)) if !(MIN_US..END_US).contains(&local) => Err(out_of_range()),
        Ok((local, _)) => Ok(local),
        Err(e) => match crate::types::parse_timestamp(s).filter(|_| e == E::BadFormat) {
            // weir's older forms (RFC 3339 and friends) stay accepted; a value
            // PostgreSQL's decoder found out of range stays refused.
            Some(us) => Ok(us),
            None => Err(match e {
                E::BadFormat => err!(InvalidDatetime, "invalid input syntax for type {ty}: \"{t}\""),
                E::FieldOverflow => err!(DatetimeFieldOverflow, "date/time field value out of range: \"{t}\""),
                E::MdFieldOverflow => err!(DatetimeFieldOverflow, "date/time field value out of range: \"{t}\"")
                    .with_hint("Perhaps you need a different \"datestyle\" setting."),
                E::OutOfRange => err!(DatetimeFieldOverflow, "timestamp out of range: \"{t}\""),
            }),
        },
    }
}

/// time_in / timetz_in: a time of day, and for a timetz the zone the text
/// names or else the session zone's offset on the text's date (today).
fn parse_time_text(t: &str, to: SqlType) -> Result<Value> {
    use crate::types::time::{self, TimeInputError as E};
    let ctx = crate::types::zone::current();
    let now = crate::types::zone::now_override().unwrap_or_else(crate::exec::functions::now_micros);
    let today = ctx.zone.to_local(now).div_euclid(crate::types::interval::USECS_PER_DAY) as i32;
    let (us, zone, days) = time::parse_time(t, today).map_err(|e| match e {
        E::BadFormat => err!(
            InvalidDatetime,
            "invalid input syntax for type {}: \"{t}\"",
            if to == SqlType::Time { "time" } else { "time with time zone" }
        ),
        E::FieldOverflow => err!(DatetimeFieldOverflow, "date/time field value out of range: \"{t}\""),
    })?;
    if !(0..=crate::types::interval::USECS_PER_DAY).contains(&us) {
        bail!(DatetimeFieldOverflow, "date/time field value out of range: \"{t}\"");
    }
    if to == SqlType::Time {
        return Ok(Value::Time(us));
    }
    // The zone's offset at that wall-clock time of that day.
    let zone = zone.unwrap_or(ctx.zone);
    let local = days as i64 * crate::types::interval::USECS_PER_DAY + us;
    let east = zone.offset_at(zone.to_utc(local));
    if !time::zone_ok(-east) {
        bail!(InvalidTimeZoneDisplacement, "time zone displacement out of range: \"{t}\"");
    }
    Ok(Value::TimeTz(time::timetz_pack(us, -east)))
}

/// Casts between time, timetz and the other date/time types, row by row
/// (timestamp_time, timestamptz_time, timestamptz_timetz, time_timetz,
/// timetz_time, time_interval, interval_time); None for a pair that is not
/// one of them.
fn cast_time(a: &ArrayRef, from: SqlType, to: SqlType) -> Option<Result<ArrayRef>> {
    use crate::types::interval::USECS_PER_DAY;
    use crate::types::time::{timetz_pack, timetz_unpack};
    use SqlType as T;
    let zone = crate::types::zone::current().zone;
    let conv: Box<dyn Fn(Value) -> Result<Value>> = match (from, to) {
        (T::Timestamp, T::Time) => Box::new(|v| Ok(if let Value::Timestamp(t) = v { Value::Time(t.rem_euclid(USECS_PER_DAY)) } else { v })),
        (T::TimestampTz, T::Time) => {
            Box::new(move |v| Ok(if let Value::Timestamp(t) = v { Value::Time(zone.to_local(t).rem_euclid(USECS_PER_DAY)) } else { v }))
        }
        (T::TimestampTz, T::TimeTz) => Box::new(move |v| {
            Ok(if let Value::Timestamp(t) = v {
                Value::TimeTz(timetz_pack(zone.to_local(t).rem_euclid(USECS_PER_DAY), -zone.offset_at(t)))
            } else {
                v
            })
        }),
        (T::Time, T::TimeTz) => {
            // The session zone's offset now (time_timetz uses today's date).
            let now = crate::types::zone::now_override().unwrap_or_else(crate::exec::functions::now_micros);
            let west = -zone.offset_at(now);
            Box::new(move |v| Ok(if let Value::Time(t) = v { Value::TimeTz(timetz_pack(t, west)) } else { v }))
        }
        (T::TimeTz, T::Time) => Box::new(|v| Ok(if let Value::TimeTz(p) = v { Value::Time(timetz_unpack(p).0) } else { v })),
        (T::Time, T::Interval) => {
            Box::new(|v| Ok(if let Value::Time(t) = v { Value::Interval(crate::types::Interval::from_micros(t)) } else { v }))
        }
        (T::Interval, T::Time) => {
            Box::new(|v| Ok(if let Value::Interval(iv) = v { Value::Time(iv.micros.rem_euclid(USECS_PER_DAY)) } else { v }))
        }
        _ => return None,
    };
    Some((|| {
        let mut out = Vec::with_capacity(a.len());
        for i in 0..a.len() {
            out.push(conv(value_at(a.as_ref(), i))?);
        }
        values_to_array(&out, to)
    })())
}

/// Parse one text value as a type, with PostgreSQL's errors.
pub fn parse_text_as(t: &str, to: SqlType) -> Result<Value> {
    // A base type's input is its representation's (`int4in`).
    if to.is_base() {
        return parse_text_as(t, to.physical());
    }
    let bad = || err!(InvalidText, "invalid input syntax for type {}: \"{}\"", to.pg_name(), t);
    let s = t.trim();
    Ok(match to {
        SqlType::Base { .. } => unreachable!("a base type parses as its representation"),
        SqlType::Int2 | SqlType::Int4 | SqlType::Int8 | SqlType::Oid => {
            let v: i64 = s.parse().map_err(|_| {
                if !s.is_empty() && s.trim_start_matches(['-', '+']).chars().all(|c| c.is_ascii_digit()) {
                    err!(NumericOutOfRange, "value \"{t}\" is out of range for type {}", to.pg_name())
                } else {
                    bad()
                }
            })?;
            let ok = match to {
                SqlType::Int2 => i16::try_from(v).is_ok(),
                SqlType::Int4 => i32::try_from(v).is_ok(),
                _ => true,
            };
            if !ok {
                bail!(NumericOutOfRange, "value \"{t}\" is out of range for type {}", to.pg_name());
            }
            Value::Int(v)
        }
        SqlType::Float4 | SqlType::Float8 => {
            let l = s.to_ascii_lowercase();
            Value::Float(match l.as_str() {
                "nan" | "+nan" | "-nan" => f64::NAN,
                "infinity" | "inf" | "+infinity" | "+inf" => f64::INFINITY,
                "-infinity" | "-inf" => f64::NEG_INFINITY,
                _ => {
                    if !s.bytes().all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-')) {
                        return Err(bad());
                    }
                    let v = if to == SqlType::Float4 {
                        s.parse::<f32>().map_err(|_| bad())? as f64
                    } else {
                        s.parse::<f64>().map_err(|_| bad())?
                    };
                    // float4in / float8in: a number beyond the type's range, or
                    // a non-zero one that rounds to zero, is refused (ERANGE).
                    let mantissa = s.split(['e', 'E']).next().unwrap_or("");
                    if v.is_infinite() || (v == 0.0 && mantissa.bytes().any(|b| (b'1'..=b'9').contains(&b))) {
                        bail!(NumericOutOfRange, "\"{t}\" is out of range for type {}", to.pg_name());
                    }
                    v
                }
            })
        }
        // PostgreSQL's boolin: any prefix of true / false / yes / no, `on`, `of[f]`, 1, 0.
        SqlType::Bool => {
            let l = s.to_ascii_lowercase();
            let prefix_of = |w: &str, min: usize| l.len() >= min && w.starts_with(l.as_str());
            if prefix_of("true", 1) || prefix_of("yes", 1) || l == "on" || l == "1" {
                Value::Bool(true)
            } else if prefix_of("false", 1) || prefix_of("no", 1) || prefix_of("off", 2) || l == "0" {
                Value::Bool(false)
            } else {
                return Err(bad());
            }
        }
        SqlType::Timestamp | SqlType::TimestampTz => Value::Timestamp(parse_timestamp_text(t, to == SqlType::TimestampTz)?),
        SqlType::Date => {
            use crate::types::datetime_input::DateInputError as E;
            Value::Date(crate::types::parse_date_checked(s).map_err(|e| {
                match e {
                    E::BadFormat => err!(InvalidDatetime, "invalid input syntax for type date: \"{t}\""),
                    E::FieldOverflow => err!(DatetimeFieldOverflow, "date/time field value out of range: \"{t}\""),
                    E::MdFieldOverflow => err!(DatetimeFieldOverflow, "date/time field value out of range: \"{t}\"")
                        .with_hint("Perhaps you need a different \"datestyle\" setting."),
                    E::OutOfRange => err!(DatetimeFieldOverflow, "date out of range: \"{t}\""),
                }
            })?)
        }
        SqlType::Interval => {
            use crate::types::interval_input::{interval_in, IntervalRange};
            Value::Interval(interval_in(s, IntervalRange::FULL, None).map_err(|e| {
                // The message quotes the input as written, spaces included.
                if e.kind == crate::error::ErrorKind::InvalidDatetime {
                    err!(InvalidDatetime, "invalid input syntax for type interval: \"{t}\"")
                } else {
                    e
                }
            })?)
        }
        SqlType::Time | SqlType::TimeTz => parse_time_text(t, to)?,
        SqlType::Text | SqlType::Varchar | SqlType::Unknown => Value::Text(t.to_string()),
        SqlType::Bytea => Value::Text(crate::types::bytea::canonical(t)?),
        SqlType::Geo(g) => Value::Text(g.canonical(t)?),
        SqlType::Numeric => Value::Text(crate::types::numeric::Numeric::parse(t)?.to_string()),
        // array_in: each element through its type's input, then the
        // canonical text form.
        SqlType::Array(e) => {
            let items = crate::types::array::parse_array(t)?;
            let mut out = Vec::with_capacity(items.len());
            for item in items {
                out.push(match item {
                    None => None,
                    Some(x) => crate::types::array::elem_text(&parse_text_as(&x, e.ty())?, e.ty()),
                });
            }
            Value::Text(crate::types::array::format_array(&out))
        }
    })
}

/// A hashable, comparable form of a value (for sets and group keys).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Key {
    Null,
    Bool(bool),
    Int(i64),
    Float(u64),
    Text(String),
    /// An interval's comparison value (equal intervals, equal keys).
    Wide(i128),
}

impl From<&Value> for Key {
    fn from(v: &Value) -> Key {
        match v {
            Value::Null => Key::Null,
            Value::Bool(b) => Key::Bool(*b),
            Value::Int(i) | Value::Timestamp(i) | Value::Time(i) | Value::TimeTz(i) => Key::Int(*i),
            Value::Interval(iv) => Key::Wide(iv.cmp_key()),
            Value::Date(d) => Key::Int(*d as i64),
            Value::Float(f) => {
                if f.fract() == 0.0 && f.abs() < 9e15 {
                    Key::Int(*f as i64)
                } else {
                    Key::Float(if *f == 0.0 { 0 } else { f.to_bits() })
                }
            }
            Value::Text(s) => Key::Text(s.clone()),
        }
    }
}

/// The rows of a subquery expression for row `row` of `batch` (its outer
/// references substituted), cached per distinct outer values.
pub fn subquery_rows(e: &Expr, batch: &RecordBatch, row: usize, ctx: &ExecCtx) -> Result<Arc<Vec<Vec<Value>>>> {
    let Expr::Subquery { plan, kind, correlated, outer_refs, cache, .. } = e else { bail!(Internal, "not a subquery expression") };
    let vals: Vec<Value> =
        if *correlated { outer_refs.iter().map(|(i, _)| value_at(batch.column(*i).as_ref(), row)).collect() } else { vec![] };
    let key: Vec<Key> = vals.iter().map(Key::from).collect();
    if let Some(r) = cache.results.lock().get(&key) {
        return Ok(r.clone());
    }
    let Some(plan) = plan.physical() else { bail!(Internal, "subquery was not physically planned") };
    let p = if *correlated {
        let refs = outer_refs.clone();
        plan.map_exprs(1, &|x, d| match x {
            Expr::Outer { depth, index, ty } if *depth == d => {
                let pos = refs.iter().position(|(i, _)| i == index)?;
                Some(Expr::Literal { value: vals[pos].clone(), ty: *ty })
            }
            _ => None,
        })
    } else {
        plan.clone()
    };
    let limit = if matches!(kind, SubqueryKind::Exists { .. }) { Some(1) } else { None };
    let rows = Arc::new(super::collect_rows(&p, ctx, limit)?);
    cache.results.lock().insert(key, rows.clone());
    Ok(rows)
}

fn eval_subquery(e: &Expr, batch: &RecordBatch, ctx: &ExecCtx) -> Result<ArrayRef> {
    let Expr::Subquery { kind, ty, .. } = e else { unreachable!() };
    let n = batch.num_rows();
    let run = |row: usize| subquery_rows(e, batch, row, ctx);
    match kind {
        SubqueryKind::Rows => bail!(Internal, "a LATERAL subquery evaluated as a value"),
        SubqueryKind::Scalar => {
            let mut out = Vec::with_capacity(n);
            for i in 0..n {
                let rows = run(i)?;
                if rows.len() > 1 {
                    bail!(CardinalityViolation, "more than one row returned by a subquery used as an expression");
                }
                out.push(rows.first().and_then(|r| r.first().cloned()).unwrap_or(Value::Null));
            }
            values_to_array(&out, *ty)
        }
        SubqueryKind::Array => {
            let mut out = Vec::with_capacity(n);
            for i in 0..n {
                let rows = run(i)?;
                let ety = ty.elem().unwrap_or(SqlType::Text);
                let items: Vec<Option<String>> = rows.iter().map(|r| crate::types::array::elem_text(&r[0], ety)).collect();
                out.push(Value::Text(crate::types::array::format_array(&items)));
            }
            values_to_array(&out, SqlType::Text)
        }
        SubqueryKind::Exists { negated } => {
            let mut out = Vec::with_capacity(n);
            for i in 0..n {
                out.push(Some(run(i)?.is_empty() == *negated));
            }
            Ok(Arc::new(BooleanArray::from(out)))
        }
        SubqueryKind::In { expr, negated } => {
            let probe = expr.eval(batch, ctx)?;
            let mut sets: HashMap<usize, (HashSet<Key>, bool)> = HashMap::new();
            let mut out = Vec::with_capacity(n);
            for i in 0..n {
                let rows = run(i)?;
                let ptr = Arc::as_ptr(&rows) as usize;
                let (set, has_null) = sets.entry(ptr).or_insert_with(|| {
                    let mut s = HashSet::new();
                    let mut hn = false;
                    for r in rows.iter() {
                        if r[0].is_null() {
                            hn = true;
                        } else {
                            s.insert(Key::from(&r[0]));
                        }
                    }
                    (s, hn)
                });
                let v = value_at(probe.as_ref(), i);
                let r = if rows.is_empty() {
                    Some(false)
                } else if v.is_null() {
                    None
                } else if set.contains(&Key::from(&v)) {
                    Some(true)
                } else if *has_null {
                    None
                } else {
                    Some(false)
                };
                out.push(if *negated { r.map(|b| !b) } else { r });
            }
            Ok(Arc::new(BooleanArray::from(out)))
        }
        SubqueryKind::Quantified { expr, op, all } => {
            let probe = expr.eval(batch, ctx)?;
            let mut out = Vec::with_capacity(n);
            for i in 0..n {
                let rows = run(i)?;
                let v = value_at(probe.as_ref(), i);
                let mut acc = Some(*all);
                for r in rows.iter() {
                    let c = compare_values(&v, &r[0], *op, expr.ty());
                    acc = if *all {
                        match (acc, c) {
                            (Some(false), _) | (_, Some(false)) => Some(false),
                            (Some(true), Some(true)) => Some(true),
                            _ => None,
                        }
                    } else {
                        match (acc, c) {
                            (Some(true), _) | (_, Some(true)) => Some(true),
                            (Some(false), Some(false)) => Some(false),
                            _ => None,
                        }
                    };
                }
                out.push(acc);
            }
            Ok(Arc::new(BooleanArray::from(out)))
        }
    }
}

fn compare_values(a: &Value, b: &Value, op: BinOp, ty: SqlType) -> Option<bool> {
    if a.is_null() || b.is_null() {
        return None;
    }
    op.holds(a.cmp_as(b, ty))
}
