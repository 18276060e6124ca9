//! A PromQL result as rows: the time, one text column per label and one
//! `float8` value column per field, in the order and with the names
//! GreptimeDB gives them (`naming`). Rows come ordered by the labels, then
//! time.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use arrow::array::{ArrayRef, Float64Array, RecordBatch, StringArray, TimestampMicrosecondArray};
use promql_parser::parser::{Expr, VectorSelector};

use super::eval::{Evaluator, Series, Val};
use super::load::{self, Labels, FIELD_LABEL};
use super::naming::{Col, Layout};
use crate::error::Result;
use crate::exec::plan::{arrow_schema, PlanColumn};
use crate::types::SqlType;
use crate::{bail, err};

/// Rows per result batch.
const OUTPUT_BATCH_ROWS: usize = 8192;

pub fn text_rows(name: &str, lines: Vec<String>) -> (Vec<PlanColumn>, Vec<RecordBatch>) {
    let cols = vec![PlanColumn::new(name, SqlType::Text)];
    let b = RecordBatch::try_new(arrow_schema(&cols), vec![Arc::new(StringArray::from(lines)) as ArrayRef])
        .expect("one text column matches its schema");
    (cols, vec![b])
}

fn first_selector(e: &Expr) -> Option<&VectorSelector> {
    match e {
        Expr::VectorSelector(vs) => Some(vs),
        Expr::MatrixSelector(m) => Some(&m.vs),
        Expr::Paren(p) => first_selector(&p.expr),
        Expr::Unary(u) => first_selector(&u.expr),
        Expr::Subquery(s) => first_selector(&s.expr),
        Expr::Call(c) => c.args.args.iter().find_map(|a| first_selector(a)),
        Expr::Aggregate(a) => first_selector(&a.expr),
        Expr::Binary(b) => first_selector(&b.lhs).or_else(|| first_selector(&b.rhs)),
        _ => None,
    }
}

/// The field names of an expression's first selector: a series'
/// `__field__` label is the index of its value column.
pub fn fields(planner: &crate::planner::Planner, e: &Expr) -> Vec<String> {
    first_selector(e).map(|s| load::field_names(planner, s)).unwrap_or_default()
}

/// The rows of a result laid out as GreptimeDB lays it out (`naming`):
/// one row per label set and step with a value, ordered by the labels,
/// then time.
pub fn rows(ev: &Evaluator, v: Val, layout: &Layout, fields: &[String]) -> Result<(Vec<PlanColumn>, Vec<RecordBatch>)> {
    let series = match v {
        Val::Scalar(s) => vec![Series { labels: vec![], vals: s.into_iter().map(Some).collect::<Vec<_>>() }],
        Val::Vector(v) => v,
        Val::Str(_) => bail!(FeatureNotSupported, "a PromQL string result cannot be returned as rows"),
        Val::Matrix(_) => {
            bail!(FeatureNotSupported, "a PromQL range vector result cannot be returned as rows; apply a function such as rate() to it")
        }
    };
    // A label the data carries that the layout lacks comes last, by name.
    let mut cols = layout.cols.clone();
    let extra: BTreeSet<&String> = series
        .iter()
        .flat_map(|s| s.labels.iter().map(|(n, _)| n))
        .filter(|n| *n != FIELD_LABEL && !cols.contains(&Col::Label((*n).clone())))
        .collect();
    cols.extend(extra.into_iter().map(|n| Col::Label(n.clone())));
    let label_names: Vec<&String> = cols
        .iter()
        .filter_map(|c| match c {
            Col::Label(l) => Some(l),
            _ => None,
        })
        .collect();
    let nvals = layout.values.len().max(1);
    // Pivot: one row key per label set without the field label.
    let mut keys: Vec<Labels> = Vec::new();
    let mut index: HashMap<Labels, usize> = HashMap::new();
    let mut cells: Vec<Vec<Option<&Vec<Option<f64>>>>> = Vec::new();
    for s in &series {
        let key: Labels = s.labels.iter().filter(|(n, _)| n != FIELD_LABEL).cloned().collect();
        let f = load::label(&s.labels, FIELD_LABEL);
        let col = fields.iter().position(|x| x == f).filter(|&i| i < nvals).unwrap_or(0);
        let at = *index.entry(key.clone()).or_insert_with(|| {
            keys.push(key);
            cells.push(vec![None; nvals]);
            keys.len() - 1
        });
        cells[at][col] = Some(&s.vals);
    }
    let mut order: Vec<usize> = (0..keys.len()).collect();
    let sort_key = |k: &Labels| label_names.iter().map(|n| load::label(k, n).to_string()).collect::<Vec<_>>();
    order.sort_by_cached_key(|&i| sort_key(&keys[i]));

    let columns = plan_columns(layout, &cols);
    let schema = arrow_schema(&columns);

    let mut batches = Vec::new();
    let mut ts: Vec<i64> = Vec::new();
    let mut labels: Vec<Vec<Option<String>>> = vec![Vec::new(); label_names.len()];
    let mut values: Vec<Vec<Option<f64>>> = vec![Vec::new(); nvals];
    let flush = |ts: &mut Vec<i64>, labels: &mut Vec<Vec<Option<String>>>, values: &mut Vec<Vec<Option<f64>>>| -> Result<RecordBatch> {
        let mut ls = labels.iter_mut();
        let arrays: Vec<ArrayRef> = cols
            .iter()
            .map(|c| -> Result<ArrayRef> {
                Ok(match c {
                    Col::Time => Arc::new(TimestampMicrosecondArray::from(ts.clone())),
                    Col::Label(_) => Arc::new(StringArray::from(std::mem::take(ls.next().expect("one list per label")))),
                    Col::Value(i) => {
                        let a: ArrayRef = Arc::new(Float64Array::from(values[*i].clone()));
                        match layout.ty(*i) {
                            SqlType::Float8 => a,
                            t => arrow::compute::cast(&a, &t.to_arrow())?,
                        }
                    }
                })
            })
            .collect::<Result<_>>()?;
        ts.clear();
        values.iter_mut().for_each(Vec::clear);
        Ok(RecordBatch::try_new(schema.clone(), arrays)?)
    };
    for &k in &order {
        for i in 0..ev.steps() {
            let row: Vec<Option<f64>> = cells[k].iter().map(|c| c.and_then(|v| v[i])).collect();
            if row.iter().all(|x| x.is_none()) {
                continue;
            }
            let t = ev.range.ts(i).checked_mul(1000).ok_or_else(|| err!(DatetimeFieldOverflow, "timestamp out of range"))?;
            ts.push(t);
            for (j, name) in label_names.iter().enumerate() {
                let v = load::label(&keys[k], name);
                labels[j].push((!v.is_empty()).then(|| v.to_string()));
            }
            for (j, x) in row.into_iter().enumerate() {
                values[j].push(x);
            }
            if ts.len() >= OUTPUT_BATCH_ROWS {
                batches.push(flush(&mut ts, &mut labels, &mut values)?);
            }
        }
        ev.planner.ctx.check()?;
    }
    if !ts.is_empty() || batches.is_empty() {
        batches.push(flush(&mut ts, &mut labels, &mut values)?);
    }
    Ok((columns, batches))
}

/// The label names an expression's result can carry, known before it is
/// evaluated (a TQL flow's sink is created from them): a selector's tag
/// columns, narrowed or widened by each node as Prometheus computes the
/// result's labels. The field label is not one (fields are value columns).
pub fn static_labels(planner: &crate::planner::Planner, e: &Expr) -> Result<std::collections::BTreeSet<String>> {
    use promql_parser::parser::token::{T_COUNT_VALUES, T_LAND, T_LOR, T_LUNLESS};
    use promql_parser::parser::{LabelModifier, VectorMatchCardinality};
    use std::collections::BTreeSet;
    let string = |e: &Expr| match e {
        Expr::StringLiteral(s) => Some(s.val.clone()),
        Expr::Paren(p) => match p.expr.as_ref() {
            Expr::StringLiteral(s) => Some(s.val.clone()),
            _ => None,
        },
        _ => None,
    };
    let selector = |vs: &VectorSelector| -> Result<BTreeSet<String>> {
        Ok(match load::target(planner, vs)? {
            Some(t) => t.tags.iter().map(|&i| t.table.columns[i].name.clone()).collect(),
            None => BTreeSet::new(),
        })
    };
    Ok(match e {
        Expr::NumberLiteral(_) | Expr::StringLiteral(_) | Expr::Extension(_) => BTreeSet::new(),
        Expr::VectorSelector(vs) => selector(vs)?,
        Expr::MatrixSelector(m) => selector(&m.vs)?,
        Expr::Paren(p) => static_labels(planner, &p.expr)?,
        Expr::Unary(u) => static_labels(planner, &u.expr)?,
        Expr::Subquery(s) => static_labels(planner, &s.expr)?,
        Expr::Call(c) => {
            let args: Vec<&Expr> = c.args.args.iter().map(|a| a.as_ref()).collect();
            let first_vector = || -> Result<BTreeSet<String>> {
                for a in &args {
                    if matches!(
                        a.value_type(),
                        promql_parser::parser::value::ValueType::Vector | promql_parser::parser::value::ValueType::Matrix
                    ) {
                        return static_labels(planner, a);
                    }
                }
                Ok(BTreeSet::new())
            };
            match c.func.name {
                "vector" | "time" | "scalar" | "pi" => BTreeSet::new(),
                "label_replace" | "label_join" => {
                    let mut l = first_vector()?;
                    if let Some(dst) = args.get(1).and_then(|a| string(a)) {
                        l.insert(dst);
                    }
                    l
                }
                "histogram_quantile" => {
                    let mut l = first_vector()?;
                    l.remove("le");
                    l
                }
                "absent" | "absent_over_time" => {
                    let vs = match args.first().copied() {
                        Some(Expr::VectorSelector(vs)) => Some(vs),
                        Some(Expr::MatrixSelector(m)) => Some(&m.vs),
                        _ => None,
                    };
                    vs.map(super::funcs::absent_labels).unwrap_or_default().into_iter().map(|(n, _)| n).collect()
                }
                _ => first_vector()?,
            }
        }
        Expr::Aggregate(a) => {
            let inner = static_labels(planner, &a.expr)?;
            let mut l: BTreeSet<String> = match &a.modifier {
                None => BTreeSet::new(),
                Some(LabelModifier::Include(ls)) => ls.labels.iter().cloned().collect(),
                Some(LabelModifier::Exclude(ls)) => inner.iter().filter(|n| !ls.labels.contains(n)).cloned().collect(),
            };
            match a.op.id() {
                promql_parser::parser::token::T_TOPK | promql_parser::parser::token::T_BOTTOMK => l = inner,
                T_COUNT_VALUES => {
                    if let Some(p) = a.param.as_deref().and_then(string) {
                        l.insert(p);
                    }
                }
                _ => {}
            }
            l
        }
        Expr::Binary(b) => {
            use promql_parser::parser::value::ValueType;
            let scalar = |e: &Expr| matches!(e.value_type(), ValueType::Scalar);
            match (scalar(&b.lhs), scalar(&b.rhs)) {
                (true, true) => BTreeSet::new(),
                (false, true) => static_labels(planner, &b.lhs)?,
                (true, false) => static_labels(planner, &b.rhs)?,
                (false, false) => {
                    let l = static_labels(planner, &b.lhs)?;
                    let r = static_labels(planner, &b.rhs)?;
                    let m = b.modifier.as_ref();
                    match b.op.id() {
                        T_LAND | T_LUNLESS => l,
                        T_LOR => l.union(&r).cloned().collect(),
                        _ => match m.map(|m| &m.card) {
                            Some(VectorMatchCardinality::ManyToOne(inc)) => l.into_iter().chain(inc.labels.iter().cloned()).collect(),
                            Some(VectorMatchCardinality::OneToMany(inc)) => r.into_iter().chain(inc.labels.iter().cloned()).collect(),
                            _ => match m.and_then(|m| m.matching.as_ref()) {
                                Some(LabelModifier::Include(ls)) => l.into_iter().filter(|n| ls.labels.contains(n)).collect(),
                                Some(LabelModifier::Exclude(ls)) => l.into_iter().filter(|n| !ls.labels.contains(n)).collect(),
                                None => l,
                            },
                        },
                    }
                }
            }
        }
    })
}

/// The columns of a result known before it is evaluated (a TQL flow's
/// sink is made from them): the layout's.
pub fn static_columns(layout: &Layout) -> Result<Vec<PlanColumn>> {
    let cols = plan_columns(layout, &layout.cols);
    for (i, c) in cols.iter().enumerate() {
        if cols[..i].iter().any(|x| x.name == c.name) {
            bail!(DuplicateColumn, "the PromQL result has two columns named \"{}\"", c.name);
        }
    }
    Ok(cols)
}

/// Result rows laid out as `want` (matched by name; a column the result
/// lacks is NULL). A result column `want` lacks is an error.
pub fn project(have: &[PlanColumn], batches: &[RecordBatch], want: &[PlanColumn]) -> Result<Vec<RecordBatch>> {
    for h in have {
        if !want.iter().any(|w| w.name == h.name) {
            bail!(DatatypeMismatch, "the PromQL result has a column \"{}\" the flow's output does not", h.name);
        }
    }
    let schema = arrow_schema(want);
    let mut out = Vec::with_capacity(batches.len());
    for b in batches {
        let cols: Vec<ArrayRef> = want
            .iter()
            .map(|w| match have.iter().position(|h| h.name == w.name) {
                Some(i) => b.column(i).clone(),
                None => arrow::array::new_null_array(&w.ty.to_arrow(), b.num_rows()),
            })
            .collect();
        out.push(RecordBatch::try_new_with_options(
            schema.clone(),
            cols,
            &arrow::array::RecordBatchOptions::new().with_row_count(Some(b.num_rows())),
        )?);
    }
    Ok(out)
}

/// The result columns `cols` stand for, named and typed by the layout.
pub(super) fn plan_columns(layout: &Layout, cols: &[Col]) -> Vec<PlanColumn> {
    cols.iter()
        .map(|c| match c {
            Col::Time => PlanColumn::new(layout.time.clone(), SqlType::Timestamp),
            Col::Label(l) => PlanColumn::new(l.clone(), SqlType::Text),
            Col::Value(i) => PlanColumn::new(layout.values.get(*i).cloned().unwrap_or_else(|| "value".into()), layout.ty(*i)),
        })
        .collect()
}
