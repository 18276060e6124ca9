//! The result layout GreptimeDB gives a PromQL expression: which columns
//! (time, labels, values) in which order, and how the value columns are
//! named. GreptimeDB plans PromQL into DataFusion plans and its names are
//! DataFusion's display names of the expressions it builds; this module
//! spells the same names from the PromQL AST:
//!
//! - a selector: the table's own columns in table order (`ts, host, val`);
//! - a function call: time, values, labels (`prom_rate(ts_range,val,ts,Int64(300000))`,
//!   `prom_avg_over_time(ts_range,val)`, `abs(val)`, `prom_round(val,Float64(0))`);
//! - arithmetic with a number: labels, time, values (`val * Float64(2)`); a
//!   comparison without `bool` filters and keeps the input's layout;
//! - an aggregation: the grouping labels, time, values (`sum(cpu.val)` over
//!   a table's own column, `sum(prom_rate(...))` over a computed one);
//! - two vectors: labels, time, values qualified by each side's table
//!   (`a.val + b.val`; `lhs.val + rhs.val` when both sides read one table);
//! - numbers alone: `time`, `value`; `time()`: `time`, `time / Float64(1000)`.
//!
//! May import `planner`, `parser`-free helpers of this module's siblings;
//! never `sql`, `server` or `flow`.

use std::collections::BTreeSet;

use promql_parser::parser::token::*;
use promql_parser::parser::value::ValueType;
use promql_parser::parser::{Expr, LabelModifier, VectorSelector};

use super::load;
use crate::error::Result;
use crate::planner::Planner;
use crate::types::SqlType;

/// One output column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Col {
    Time,
    Label(String),
    /// The value of the i-th field (in the first selector's field order).
    Value(usize),
}

#[derive(Debug, Clone)]
pub struct Layout {
    /// The time column's name.
    pub time: String,
    /// The columns in output order.
    pub cols: Vec<Col>,
    /// The value columns' names, by field.
    pub values: Vec<String>,
    /// The value columns' types where the values are a table's column
    /// values passed through (a selector, a filter, topk…); float8 where
    /// missing (computed values, as GreptimeDB's are Float64).
    pub types: Vec<SqlType>,
    /// The label names, in GreptimeDB's tag order.
    pub labels: Vec<String>,
    /// The table the values come from (the qualifier of two-vector
    /// arithmetic), empty for none.
    table: String,
    /// The values are the table's own columns (aggregations then name them
    /// qualified, `sum(cpu.val)`).
    raw: bool,
}

impl Layout {
    fn literal(value: String) -> Layout {
        Layout {
            time: "time".into(),
            cols: vec![Col::Time, Col::Value(0)],
            values: vec![value],
            types: vec![],
            labels: vec![],
            table: String::new(),
            raw: false,
        }
    }

    /// Labels, time, values (a projection over each value column).
    fn tags_time_values(mut self) -> Layout {
        self.cols = self.labels.iter().map(|l| Col::Label(l.clone())).collect();
        self.cols.push(Col::Time);
        self.cols.extend((0..self.values.len()).map(Col::Value));
        self.raw = false;
        self
    }

    /// Time, values, labels (a function call's projection).
    fn time_values_tags(mut self) -> Layout {
        self.cols = vec![Col::Time];
        self.cols.extend((0..self.values.len()).map(Col::Value));
        self.cols.extend(self.labels.iter().map(|l| Col::Label(l.clone())));
        self.raw = false;
        self
    }

    /// The type of value column `i`.
    pub fn ty(&self, i: usize) -> SqlType {
        self.types.get(i).copied().unwrap_or(SqlType::Float8)
    }

    fn qualified(&self, v: &str) -> String {
        if self.raw && !self.table.is_empty() {
            format!("{}.{v}", self.table)
        } else {
            v.to_string()
        }
    }

    /// `AS name`: the one value column renamed and, as GreptimeDB projects
    /// it, first, then the labels, then the time.
    pub fn aliased(&mut self, name: String) {
        self.values = vec![name];
        self.types.truncate(1);
        self.cols = vec![Col::Value(0)];
        self.cols.extend(self.labels.iter().map(|l| Col::Label(l.clone())));
        self.cols.push(Col::Time);
    }
}

/// DataFusion's display of a float literal.
fn float(v: f64) -> String {
    format!("Float64({v})")
}

fn binop(op: u16, l: &str, r: &str) -> String {
    let sym = match op {
        T_ADD => "+",
        T_SUB => "-",
        T_MUL => "*",
        T_DIV => "/",
        T_MOD => "%",
        T_EQLC => "=",
        T_NEQ => "!=",
        T_GTR => ">",
        T_LSS => "<",
        T_GTE => ">=",
        T_LTE => "<=",
        T_POW => return format!("power({l},{r})"),
        T_ATAN2 => return format!("atan2({l},{r})"),
        _ => "?",
    };
    format!("{l} {sym} {r}")
}

fn is_comparison(op: u16) -> bool {
    matches!(op, T_EQLC | T_NEQ | T_GTR | T_LSS | T_GTE | T_LTE)
}

/// The literal expression GreptimeDB builds for a scalar made of numbers
/// (and `time()`), or None when the expression reads data.
fn literal(e: &Expr, time: &str) -> Option<String> {
    match e {
        Expr::NumberLiteral(n) => Some(float(n.val)),
        Expr::StringLiteral(s) => Some(format!("Utf8(\"{}\")", s.val)),
        Expr::Paren(p) => literal(&p.expr, time),
        Expr::Unary(u) => match u.expr.as_ref() {
            Expr::NumberLiteral(n) => Some(float(-n.val)),
            other => literal(other, time).map(|s| format!("(- {s})")),
        },
        Expr::Binary(b) => Some(binop(b.op.id(), &literal(&b.lhs, time)?, &literal(&b.rhs, time)?)),
        Expr::Call(c) if c.func.name == "time" => Some(format!("{time} / Float64(1000)")),
        _ => None,
    }
}

fn selector(planner: &Planner, vs: &VectorSelector) -> Result<Layout> {
    let Some(table) = load::metric_name(vs).ok().and_then(|n| planner.catalog.table(&planner.database, &n)) else {
        return Ok(Layout::literal("value".into()));
    };
    let fields = match load::target(planner, vs)? {
        Some(t) => t.fields,
        None => vec![],
    };
    let ti = table.time_index;
    let mut cols = Vec::new();
    for i in 0..table.columns.len() {
        if Some(i) == ti {
            cols.push(Col::Time);
        } else if table.primary_key.contains(&i) {
            cols.push(Col::Label(table.columns[i].name.clone()));
        } else if let Some(f) = fields.iter().position(|&x| x == i) {
            cols.push(Col::Value(f));
        }
    }
    let mut values: Vec<String> = fields.iter().map(|&f| table.columns[f].name.clone()).collect();
    if values.is_empty() {
        values.push("value".into());
        cols.push(Col::Value(0));
    }
    Ok(Layout {
        time: ti.map(|i| table.columns[i].name.clone()).unwrap_or_else(|| "time".into()),
        cols,
        types: fields.iter().map(|&f| table.columns[f].ty).collect(),
        values,
        labels: table.primary_key.iter().map(|&i| table.columns[i].name.clone()).collect(),
        table: table.name.clone(),
        raw: true,
    })
}

/// The labels of `set` in the order of `first`, then of `second`, then by
/// name.
fn ordered(set: &BTreeSet<String>, first: &[String], second: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for l in first.iter().chain(second).chain(set.iter()) {
        if set.contains(l) && !out.contains(l) {
            out.push(l.clone());
        }
    }
    out
}

/// Names of the range functions GreptimeDB implements as `prom_*` UDFs over
/// a range.
fn range_call(name: &str, args: &[&Expr], inner: &Layout, range_ms: i64, time: &str) -> Vec<String> {
    let lit = |e: &Expr| literal(e, time).unwrap_or_else(|| "?".into());
    inner
        .values
        .iter()
        .map(|v| match name {
            "rate" | "increase" | "delta" => format!("prom_{name}(ts_range,{v},{time},Int64({range_ms}))"),
            "quantile_over_time" => format!("prom_quantile_over_time(ts_range,{v},{})", lit(args[0])),
            "predict_linear" => format!("prom_predict_linear(ts_range,{v},{})", lit(args[1])),
            "holt_winters" | "double_exponential_smoothing" => {
                format!("prom_double_exponential_smoothing(ts_range,{v},{},{})", lit(args[1]), lit(args[2]))
            }
            _ => format!("prom_{name}(ts_range,{v})"),
        })
        .collect()
}

/// The layout of an expression's result.
pub fn layout(planner: &Planner, e: &Expr) -> Result<Layout> {
    Ok(match e {
        Expr::NumberLiteral(_) | Expr::StringLiteral(_) | Expr::Extension(_) => Layout::literal("value".into()),
        Expr::VectorSelector(vs) => selector(planner, vs)?,
        Expr::MatrixSelector(m) => selector(planner, &m.vs)?,
        Expr::Paren(p) => layout(planner, &p.expr)?,
        Expr::Subquery(s) => layout(planner, &s.expr)?,
        Expr::Unary(_) if literal(e, "time").is_some() => Layout::literal("value".into()),
        Expr::Unary(u) => {
            let mut l = layout(planner, &u.expr)?;
            l.types.clear();
            l.values = l.values.iter().map(|v| format!("(- {v})")).collect();
            l.tags_time_values()
        }
        Expr::Binary(b) => {
            let op = b.op.id();
            let return_bool = b.modifier.as_ref().is_some_and(|m| m.return_bool);
            let filter = is_comparison(op) && !return_bool;
            if literal(&b.lhs, "time").is_some() && literal(&b.rhs, "time").is_some() {
                return Ok(Layout::literal("value".into()));
            }
            if let Some(lit) = literal(&b.lhs, "") {
                let mut l = layout(planner, &b.rhs)?;
                if filter {
                    return Ok(l);
                }
                let lit = literal(&b.lhs, &l.time).unwrap_or(lit);
                l.types.clear();
                l.values = l.values.iter().map(|v| binop(op, &lit, v)).collect();
                return Ok(l.tags_time_values());
            }
            if let Some(lit) = literal(&b.rhs, "") {
                let mut l = layout(planner, &b.lhs)?;
                if filter {
                    return Ok(l);
                }
                let lit = literal(&b.rhs, &l.time).unwrap_or(lit);
                l.types.clear();
                l.values = l.values.iter().map(|v| binop(op, v, &lit)).collect();
                return Ok(l.tags_time_values());
            }
            let left = layout(planner, &b.lhs)?;
            let right = layout(planner, &b.rhs)?;
            if matches!(op, T_LAND | T_LOR | T_LUNLESS) {
                let mut l = left;
                if op == T_LOR {
                    for r in &right.labels {
                        if !l.labels.contains(r) {
                            l.labels.push(r.clone());
                            l.cols.push(Col::Label(r.clone()));
                        }
                    }
                }
                return Ok(l);
            }
            let labels = ordered(&super::output::static_labels(planner, e)?, &left.labels, &right.labels);
            let (lq, rq) =
                if left.table == right.table { ("lhs".to_string(), "rhs".to_string()) } else { (left.table.clone(), right.table.clone()) };
            let q = |t: &str, v: &str| if t.is_empty() { v.to_string() } else { format!("{t}.{v}") };
            let values: Vec<String> = if filter {
                left.values.clone()
            } else {
                left.values.iter().zip(&right.values).map(|(a, b)| binop(op, &q(&lq, a), &q(&rq, b))).collect()
            };
            let values = if values.is_empty() { vec!["value".to_string()] } else { values };
            let time = if right.labels.is_empty() { left.time.clone() } else { right.time.clone() };
            let table = if left.table == right.table {
                if right.labels.is_empty() {
                    "lhs".into()
                } else {
                    "rhs".into()
                }
            } else if right.labels.is_empty() {
                left.table.clone()
            } else {
                right.table.clone()
            };
            Layout { time, cols: vec![], values, types: vec![], labels, table, raw: false }.tags_time_values()
        }
        Expr::Aggregate(a) => {
            let inner = layout(planner, &a.expr)?;
            let op = a.op.id();
            if matches!(op, T_TOPK | T_BOTTOMK) {
                // GreptimeDB: the values, the labels, then the time
                // (promql/topk_bottomk.result).
                let mut l = inner;
                l.cols = (0..l.values.len()).map(Col::Value).collect();
                l.cols.extend(l.labels.iter().map(|x| Col::Label(x.clone())));
                l.cols.push(Col::Time);
                l.raw = false;
                return Ok(l);
            }
            let mut groups: Vec<String> = match &a.modifier {
                None => vec![],
                Some(LabelModifier::Include(ls)) => ls.labels.iter().filter(|l| inner.labels.contains(l)).cloned().collect(),
                Some(LabelModifier::Exclude(ls)) => inner.labels.iter().filter(|l| !ls.labels.contains(l)).cloned().collect(),
            };
            let name = a.op.to_string().to_lowercase();
            let values: Vec<String> = match op {
                T_COUNT_VALUES => {
                    if let Some(Expr::StringLiteral(s)) = a.param.as_deref() {
                        if !groups.contains(&s.val) {
                            groups.push(s.val.clone());
                        }
                    }
                    inner.values.iter().map(|v| format!("count({})", inner.qualified(v))).collect()
                }
                T_QUANTILE => {
                    let q = a.param.as_deref().and_then(|p| literal(p, &inner.time)).unwrap_or_else(|| "?".into());
                    inner.values.iter().map(|v| format!("quantile({q},{})", inner.qualified(v))).collect()
                }
                _ => inner.values.iter().map(|v| format!("{name}({})", inner.qualified(v))).collect(),
            };
            // DataFusion's result types: count is bigint, sum of integers
            // bigint, min and max the input's type, the rest float8.
            let types = (0..values.len())
                .map(|i| {
                    let t = inner.ty(i);
                    let int = matches!(t, SqlType::Int2 | SqlType::Int4 | SqlType::Int8);
                    match op {
                        T_COUNT | T_COUNT_VALUES => SqlType::Int8,
                        T_SUM if int => SqlType::Int8,
                        T_MIN | T_MAX => t,
                        _ => SqlType::Float8,
                    }
                })
                .collect();
            let l =
                Layout { time: inner.time.clone(), cols: vec![], values, types, labels: groups, table: inner.table.clone(), raw: false };
            if op == T_COUNT_VALUES {
                // GreptimeDB: the count, the time, then the labels.
                let mut l = l.time_values_tags();
                l.cols.remove(0);
                l.cols.insert(l.values.len(), Col::Time);
                return Ok(l);
            }
            l.tags_time_values()
        }
        Expr::Call(c) => {
            let name = c.func.name;
            let args: Vec<&Expr> = c.args.args.iter().map(|a| a.as_ref()).collect();
            let arg_of = |t: ValueType| args.iter().copied().find(|a| a.value_type() == t);
            if let Some(m) = arg_of(ValueType::Matrix) {
                let (inner, range_ms) = match strip_parens(m) {
                    Expr::MatrixSelector(ms) => (selector(planner, &ms.vs)?, ms.range.as_millis() as i64),
                    Expr::Subquery(s) => (layout(planner, &s.expr)?, s.range.as_millis() as i64),
                    other => (layout(planner, other)?, 0),
                };
                let mut l = inner.clone();
                l.types.clear();
                l.values = range_call(name, &args, &inner, range_ms, &inner.time);
                if name == "absent_over_time" {
                    // GreptimeDB plans it as its prom_absent_over_time UDF
                    // (planner.rs); the labels are Prometheus's.
                    let mut a = absent(planner, m)?;
                    a.values = l.values.iter().take(1).cloned().collect();
                    return Ok(a);
                }
                return Ok(l.time_values_tags());
            }
            let lit = |i: usize, time: &str| args.get(i).and_then(|a| literal(a, time));
            match name {
                "time" => Layout::literal("time / Float64(1000)".into()),
                // GreptimeDB's EmptyMetric of vector() names its value
                // greptime_value (its planner's create_vector_plan).
                "vector" => Layout::literal("greptime_value".into()),
                // promql/math.result: `pi()`.
                "pi" => Layout::literal("pi()".into()),
                // promql/timestamp_fn.result: time, `value`, labels; the
                // table stays the qualifier of two-vector arithmetic.
                "timestamp" => {
                    let mut l = layout(planner, args[0])?;
                    l.types.clear();
                    if l.values.len() == 1 {
                        l.values = vec!["value".into()];
                    } else {
                        l.values = l.values.iter().map(|v| format!("timestamp({v})")).collect();
                    }
                    l.time_values_tags()
                }
                "scalar" => {
                    let inner = layout(planner, args[0])?;
                    let v = inner.values.first().cloned().unwrap_or_else(|| "value".into());
                    Layout {
                        time: inner.time.clone(),
                        cols: vec![Col::Time, Col::Value(0)],
                        values: vec![format!("scalar({v})")],
                        types: vec![],
                        labels: vec![],
                        table: inner.table.clone(),
                        raw: false,
                    }
                }
                "absent" => absent(planner, args[0])?,
                "sort" | "sort_desc" => layout(planner, args[0])?,
                "label_replace" | "label_join" => {
                    let mut l = layout(planner, args[0])?;
                    if let Some(dst) = args.get(1).and_then(|a| literal_string(a)) {
                        if !l.labels.contains(&dst) {
                            l.labels.push(dst.clone());
                            l.cols.push(Col::Label(dst));
                        }
                    }
                    l
                }
                "histogram_quantile" => {
                    let mut l = layout(planner, args[1])?;
                    l.types.clear();
                    l.labels.retain(|x| x != "le");
                    l.cols.retain(|x| *x != Col::Label("le".into()));
                    l
                }
                "year" | "month" | "day_of_month" | "day_of_week" | "day_of_year" | "days_in_month" | "hour" | "minute" => {
                    let part = match name {
                        "day_of_month" => "day",
                        "day_of_week" => "dow",
                        "day_of_year" => "doy",
                        other => other,
                    };
                    let mut l = match args.first() {
                        Some(a) => layout(planner, a)?,
                        None => Layout::literal(String::new()),
                    };
                    let t = l.time.clone();
                    let v = if name == "days_in_month" {
                        format!(
                            "date_part(Utf8(\"day\"),date_trunc(Utf8(\"month\"),{t}) + IntervalYearMonth(\"1\") - IntervalDayTime(\"4294967296\"))"
                        )
                    } else {
                        format!("date_part(Utf8(\"{part}\"),{t})")
                    };
                    l.types.clear();
                    l.values = vec![v; l.values.len().max(1)];
                    if args.is_empty() {
                        l
                    } else {
                        l.time_values_tags()
                    }
                }
                _ => {
                    // An instant function over a vector.
                    let Some(v) = arg_of(ValueType::Vector) else { return Ok(Layout::literal("value".into())) };
                    let mut l = layout(planner, v)?;
                    let t = l.time.clone();
                    let extra: Vec<String> = (1..args.len()).map(|i| lit(i, &t).unwrap_or_else(|| "?".into())).collect();
                    l.types.clear();
                    l.values = l
                        .values
                        .iter()
                        .map(|v| match name {
                            "round" => format!("prom_round({v},{})", extra.first().cloned().unwrap_or_else(|| float(0.0))),
                            "sgn" => format!("signum({v})"),
                            "deg" => format!("degrees({v})"),
                            "rad" => format!("radians({v})"),
                            _ if extra.is_empty() => format!("{name}({v})"),
                            _ => format!("{name}({v},{})", extra.join(",")),
                        })
                        .collect();
                    l.time_values_tags()
                }
            }
        }
    })
}

fn strip_parens(e: &Expr) -> &Expr {
    match e {
        Expr::Paren(p) => strip_parens(&p.expr),
        other => other,
    }
}

fn literal_string(e: &Expr) -> Option<String> {
    match strip_parens(e) {
        Expr::StringLiteral(s) => Some(s.val.clone()),
        _ => None,
    }
}

/// `absent(...)`: time, value, the labels its equality matchers give. As
/// GreptimeDB names them (promql/absent.result): the time and the value
/// after the argument's (`ts`, `val`, `sum(t.val)`), or `time` and `value`
/// for an unknown metric.
fn absent(planner: &Planner, arg: &Expr) -> Result<Layout> {
    let vs = match strip_parens(arg) {
        Expr::VectorSelector(vs) => Some(vs),
        Expr::MatrixSelector(m) => Some(&m.vs),
        _ => None,
    };
    let labels: Vec<String> = vs.map(super::plan::absent_labels).unwrap_or_default().into_iter().map(|(n, _)| n).collect();
    let inner = layout(planner, arg)?;
    let value = inner.values.first().cloned().unwrap_or_else(|| "value".into());
    let mut l = Layout::literal(value);
    l.time = inner.time;
    l.cols.extend(labels.iter().map(|x| Col::Label(x.clone())));
    l.labels = labels;
    Ok(l)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_render_as_datafusion_does() {
        let e = promql_parser::parser::parse("1 * 2 + 4 / 6").unwrap();
        assert_eq!(literal(&e, "ts").as_deref(), Some("Float64(1) * Float64(2) + Float64(4) / Float64(6)"));
        let e = promql_parser::parser::parse("0.0015").unwrap();
        assert_eq!(literal(&e, "ts").as_deref(), Some("Float64(0.0015)"));
        let e = promql_parser::parser::parse("time()").unwrap();
        assert_eq!(literal(&e, "ts").as_deref(), Some("ts / Float64(1000)"));
        assert_eq!(binop(T_POW, "val", "Float64(2)"), "power(val,Float64(2))");
    }
}
