//! A PromQL result as rows: the time, one text column per label and one
//! `float8` value column per field, in the order and with the names
//! GreptimeDB gives them (`naming`). Rows come ordered by the labels, then
//! time.

use std::sync::Arc;

use arrow::array::{ArrayRef, RecordBatch, StringArray};
use promql_parser::parser::{Expr, VectorSelector};

use super::load;
use super::naming::{Col, Layout};
use crate::bail;
use crate::error::Result;
use crate::exec::plan::{arrow_schema, PlanColumn};
use crate::types::SqlType;

pub fn text_rows(name: &str, lines: Vec<String>) -> (Vec<PlanColumn>, Vec<RecordBatch>) {
    let cols = vec![PlanColumn::new(name, SqlType::Text)];
    let b = RecordBatch::try_new(arrow_schema(&cols), vec![Arc::new(StringArray::from(lines)) as ArrayRef])
        .expect("one text column matches its schema");
    (cols, vec![b])
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
                    vs.map(super::plan::absent_labels).unwrap_or_default().into_iter().map(|(n, _)| n).collect()
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
