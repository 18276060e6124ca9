//! A partition tree, loaded from the catalog with its keys bound and its
//! bounds evaluated: which leaf each row belongs to (tuple routing, the
//! partition-constraint check), the leaves in PostgreSQL's order (a
//! partitioned table's scan reads its leaves' regions) and the overlap
//! checks of a new bound.
//!
//! May import `catalog`, `exec` (expressions), `types`; never `sql`.

use std::cmp::Ordering;
use std::sync::Arc;

use arrow::array::{ArrayRef, RecordBatch, RecordBatchOptions};

use super::logical::LogicalPlan;
use super::{coerce, Planner, Scope};
use crate::catalog::partition::{Bound, RangeDatum, Strategy};
use crate::catalog::TableDef;
use crate::error::Result;
use crate::exec::expr::Expr;
use crate::exec::plan::PlanColumn;
use crate::exec::plan::SetOpKind;
use crate::types::{SqlType, Value};
use crate::{bail, err};

/// One datum of an evaluated range bound.
#[derive(Debug, Clone)]
pub enum Datum {
    Min,
    Max,
    V(Value),
}

/// A bound with its constants evaluated in the key's types.
#[derive(Debug, Clone)]
pub enum EvalBound {
    Default,
    List { values: Vec<Value>, null: bool },
    Range { from: Vec<Datum>, to: Vec<Datum> },
    Hash { modulus: u64, remainder: u64 },
}

/// A partitioned table's key, bound over its columns.
#[derive(Debug, Clone)]
pub struct BoundKey {
    pub strategy: Strategy,
    pub exprs: Vec<Expr>,
    pub text: Vec<String>,
    /// HASH: each key element's seeded 64-bit hash (its operator class's
    /// support function 2 called with `HASH_PARTITION_SEED`), as int8.
    pub hashes: Vec<Expr>,
}

/// PostgreSQL's seed of the partition hash functions (partition.h).
const HASH_PARTITION_SEED: u64 = 0x7A5B_2236_7996_DCFD;

/// PostgreSQL's hash_combine64.
fn hash_combine64(a: u64, b: u64) -> u64 {
    a ^ b.wrapping_add(0x49a0_f4dd_15e5_a8e3).wrapping_add(a << 54).wrapping_add(a >> 7)
}

/// A row's partition hash (compute_partition_hash_value): the elements'
/// hashes combined in key order, NULLs left out.
fn row_hash(hashes: &[ArrayRef], row: usize) -> u64 {
    hashes.iter().fold(0u64, |acc, a| match crate::types::value_at(a.as_ref(), row) {
        Value::Int(h) => hash_combine64(acc, h as u64),
        _ => acc,
    })
}

/// The built-in hash operator class of a type: its extended hash function.
fn default_hash(e: Expr, seed: Expr) -> Option<Expr> {
    let name = match e.ty() {
        SqlType::Int2 => "hashint2extended",
        SqlType::Int4 => "hashint4extended",
        SqlType::Int8 => "hashint8extended",
        SqlType::Text | SqlType::Varchar => "hashtextextended",
        _ => return None,
    };
    Some(Expr::Func { name: name.into(), args: vec![e, seed], ty: SqlType::Int8 })
}

impl BoundKey {
    pub fn types(&self) -> Vec<SqlType> {
        self.exprs.iter().map(|e| e.ty()).collect()
    }
}

/// A node of the tree: a table, its key when partitioned, its bound under
/// its parent.
#[derive(Debug, Clone)]
pub struct Node {
    pub def: TableDef,
    pub parent: Option<usize>,
    pub bound: Option<EvalBound>,
    pub key: Option<BoundKey>,
    /// Children in PostgreSQL's bound order (the default one last).
    pub children: Vec<usize>,
}

/// A tree rooted at some table (nodes[0]).
pub struct Tree {
    pub nodes: Vec<Node>,
}

/// Where one row goes: a leaf (node index) or the partitioned node where
/// no partition was found.
enum Routed {
    Leaf(usize, bool),
    NoPartition(usize, bool),
}

#[cfg(test)]
mod tests {
    use super::*;

    /// insert.sql's hash_parted: its opclass hashes a to a + seed, and the
    /// combined hash of one key is then a (mod 4) apart from a constant
    /// that is 0 mod 4, so a row goes to partition a % 4.
    #[test]
    fn partition_hash_combines_as_postgresql() {
        for a in 0..20u64 {
            let h = hash_combine64(0, a.wrapping_add(HASH_PARTITION_SEED));
            assert_eq!(h % 4, a % 4);
        }
    }
}

fn cmp_values(a: &Value, b: &Value) -> Ordering {
    a.total_cmp(b)
}

/// A key or bound value in the form bounds compare: a numeric (its output
/// text) becomes the hex of its sort key, which orders as the numbers do
/// (9.5 < 10, 1.0 = 1.00); other values as they are.
fn comparable(v: Value, ty: SqlType) -> Value {
    match (ty, &v) {
        (SqlType::Numeric, Value::Text(s)) => match crate::types::numeric::Numeric::parse(s) {
            Ok(n) => Value::Text(n.sort_key().iter().map(|b| format!("{b:02x}")).collect()),
            Err(_) => v,
        },
        _ => v,
    }
}

/// A key tuple against a range bound (PostgreSQL's partition_rbound_cmp).
fn cmp_key_bound(key: &[Value], bound: &[Datum]) -> Ordering {
    for (k, d) in key.iter().zip(bound) {
        match d {
            Datum::Min => return Ordering::Greater,
            Datum::Max => return Ordering::Less,
            Datum::V(v) => match cmp_values(k, v) {
                Ordering::Equal => continue,
                o => return o,
            },
        }
    }
    Ordering::Equal
}

/// Two range bounds (datum by datum; MINVALUE / MAXVALUE end the comparison).
fn cmp_bounds(a: &[Datum], b: &[Datum]) -> Ordering {
    for (x, y) in a.iter().zip(b) {
        let o = match (x, y) {
            (Datum::Min, Datum::Min) | (Datum::Max, Datum::Max) => return Ordering::Equal,
            (Datum::Min, _) | (_, Datum::Max) => Ordering::Less,
            (Datum::Max, _) | (_, Datum::Min) => Ordering::Greater,
            (Datum::V(x), Datum::V(y)) => cmp_values(x, y),
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

impl EvalBound {
    /// Does a key tuple (no partition decides for NULL in a range key) fit?
    fn accepts(&self, key: &[Value]) -> bool {
        match self {
            EvalBound::Default => false,
            EvalBound::List { values, null } => match &key[0] {
                Value::Null => *null,
                k => values.iter().any(|v| cmp_values(k, v) == Ordering::Equal),
            },
            EvalBound::Range { from, to } => {
                !key.iter().any(|k| matches!(k, Value::Null))
                    && cmp_key_bound(key, from) != Ordering::Less
                    && cmp_key_bound(key, to) == Ordering::Less
            }
            // The key is the row's partition hash.
            EvalBound::Hash { modulus, remainder } => matches!(key.first(), Some(Value::Int(h)) if (*h as u64) % modulus == *remainder),
        }
    }

    /// A sort key for PostgreSQL's partition order.
    fn order(&self, other: &EvalBound) -> Ordering {
        use EvalBound::*;
        match (self, other) {
            (Default, Default) => Ordering::Equal,
            (Default, _) => Ordering::Greater,
            (_, Default) => Ordering::Less,
            (List { values: a, .. }, List { values: b, .. }) => {
                let min = |v: &Vec<Value>| v.iter().min_by(|x, y| cmp_values(x, y)).cloned();
                match (min(a), min(b)) {
                    (Some(x), Some(y)) => cmp_values(&x, &y),
                    (None, Some(_)) => Ordering::Greater,
                    (Some(_), None) => Ordering::Less,
                    (None, None) => Ordering::Equal,
                }
            }
            (Range { from: a, .. }, Range { from: b, .. }) => cmp_bounds(a, b),
            (Hash { modulus: m1, remainder: a }, Hash { modulus: m2, remainder: b }) => (m1, a).cmp(&(m2, b)),
            _ => Ordering::Equal,
        }
    }
}

fn unit_batch() -> Result<RecordBatch> {
    Ok(RecordBatch::try_new_with_options(
        Arc::new(arrow::datatypes::Schema::empty()),
        vec![],
        &RecordBatchOptions::new().with_row_count(Some(1)),
    )?)
}

/// A value's text as PostgreSQL prints it in an error's DETAIL.
fn value_text(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        v => crate::types::format_value(v),
    }
}

impl Planner<'_> {
    fn table_columns(def: &TableDef) -> Vec<PlanColumn> {
        def.columns.iter().map(|c| PlanColumn { name: c.name.clone(), qualifier: Some(def.name.clone()), ty: c.ty }).collect()
    }

    /// A partitioned table's key bound over its columns.
    pub fn partition_key(&self, def: &TableDef) -> Result<Option<BoundKey>> {
        self.partition_key_over(def, def)
    }

    /// A partitioned table's key bound over another table of its tree (the
    /// root: the columns are the same by name, maybe not in order).
    fn partition_key_over(&self, def: &TableDef, over: &TableDef) -> Result<Option<BoundKey>> {
        let Some(k) = &def.partition.key else { return Ok(None) };
        let scope = Scope::new(Self::table_columns(over), None);
        let mut exprs = Vec::new();
        for t in &k.exprs {
            let e = crate::parser::parse_expr(t)?;
            exprs.push(self.bind_expr(&e, &scope, None)?);
        }
        let hashes = if k.strategy == Strategy::Hash { self.partition_hashes(def, k, &exprs, &scope)? } else { vec![] };
        Ok(Some(BoundKey { strategy: k.strategy, exprs, text: k.exprs.clone(), hashes }))
    }

    /// Each hash key element's hash call: its operator class's support
    /// function 2 (a user function) or the type's built-in one.
    fn partition_hashes(
        &self,
        def: &TableDef,
        key: &crate::catalog::partition::PartitionKey,
        exprs: &[Expr],
        scope: &Scope,
    ) -> Result<Vec<Expr>> {
        let seed = Expr::lit(Value::Int(HASH_PARTITION_SEED as i64), SqlType::Int8);
        let mut out = Vec::with_capacity(exprs.len());
        for (i, e) in exprs.iter().enumerate() {
            let call = match key.opclass(i) {
                Some(name) => {
                    let class = self
                        .catalog
                        .opclass(&def.database, "hash", name)
                        .ok_or_else(|| err!(UndefinedObject, "operator class \"{name}\" does not exist for access method \"hash\""))?;
                    if super::user_type::type_ref_type(self.catalog, &def.database, &class.for_type)? != e.ty() {
                        bail!(DatatypeMismatch, "operator class \"{name}\" does not accept data type {}", e.ty().pg_name());
                    }
                    let f = class
                        .support(2)
                        .ok_or_else(|| err!(UndefinedObject, "operator class \"{name}\" of access method hash lacks support function 2"))?;
                    let (fname, defs) = super::user_type::support_function(self.catalog, &def.database, f)?;
                    self.bind_user_call(&fname, defs, vec![e.clone(), seed.clone()], &[None, None], scope)?
                }
                None => default_hash(e.clone(), seed.clone()).ok_or_else(|| {
                    err!(UndefinedObject, "data type {} has no default operator class for access method \"hash\"", e.ty().pg_name())
                        .with_hint("You must specify a hash operator class or define a default hash operator class for the data type.")
                })?,
            };
            out.push(coerce(call, SqlType::Int8)?);
        }
        Ok(out)
    }

    /// One constant of a bound, in the key column's type.
    fn bound_value(&self, sql: &str, ty: SqlType) -> Result<Value> {
        let e = crate::parser::parse_expr(sql)?;
        let b = self.bind_expr(&e, &Scope::new(vec![], None), None)?;
        let b = coerce(b, ty)?;
        let a = b.eval(&unit_batch()?, &self.ctx)?;
        let a = crate::exec::expr::cast_array(&a, b.ty(), ty)?;
        Ok(comparable(crate::types::value_at(a.as_ref(), 0), ty))
    }

    /// A bound's constants evaluated in the key's types.
    pub fn eval_bound(&self, key: &BoundKey, bound: &Bound) -> Result<EvalBound> {
        let types = key.types();
        Ok(match bound {
            Bound::Default => EvalBound::Default,
            Bound::List(v) => {
                let mut values = Vec::new();
                let mut null = false;
                for s in v {
                    match self.bound_value(s, types[0])? {
                        Value::Null => null = true,
                        x => {
                            if !values.iter().any(|y| cmp_values(&x, y) == Ordering::Equal) {
                                values.push(x)
                            }
                        }
                    }
                }
                EvalBound::List { values, null }
            }
            Bound::Range { from, to } => {
                let eval = |ds: &[RangeDatum]| -> Result<Vec<Datum>> {
                    let mut out = Vec::new();
                    for (i, d) in ds.iter().enumerate() {
                        out.push(match d {
                            RangeDatum::MinValue => Datum::Min,
                            RangeDatum::MaxValue => Datum::Max,
                            RangeDatum::Value(s) => match self.bound_value(s, types[i])? {
                                Value::Null => bail!(InvalidTableDefinition, "cannot specify NULL in range bound"),
                                v => Datum::V(v),
                            },
                        });
                    }
                    Ok(out)
                };
                EvalBound::Range { from: eval(from)?, to: eval(to)? }
            }
            Bound::Hash { modulus, remainder } => EvalBound::Hash { modulus: *modulus, remainder: *remainder },
        })
    }

    /// The tree under a table (the table itself when it is not partitioned).
    pub fn partition_tree(&self, def: &TableDef) -> Result<Tree> {
        let mut tree = Tree { nodes: vec![] };
        self.add_node(&mut tree, def.clone(), None, None, def)?;
        Ok(tree)
    }

    fn add_node(&self, tree: &mut Tree, def: TableDef, parent: Option<usize>, bound: Option<EvalBound>, root: &TableDef) -> Result<usize> {
        let key = self.partition_key_over(&def, root)?;
        let me = tree.nodes.len();
        let children: Vec<TableDef> = if key.is_some() { self.catalog.partitions(&def.database, &def.name) } else { vec![] };
        tree.nodes.push(Node { def, parent, bound, key: key.clone(), children: vec![] });
        if let Some(key) = key {
            let mut kids: Vec<(EvalBound, TableDef)> = Vec::new();
            for c in children {
                let b = c.partition.of.as_ref().map(|o| o.bound.clone()).unwrap_or(Bound::Default);
                kids.push((self.eval_bound(&key, &b)?, c));
            }
            kids.sort_by(|a, b| a.0.order(&b.0));
            for (b, c) in kids {
                let i = self.add_node(tree, c, Some(me), Some(b), root)?;
                tree.nodes[me].children.push(i);
            }
        }
        Ok(me)
    }

    /// The tree from a table's topmost ancestor, and the table's node in it.
    pub fn partition_root(&self, def: &TableDef) -> Result<(Tree, usize)> {
        let mut root = def.clone();
        while let Some(of) = &root.partition.of {
            root = self
                .catalog
                .table(&root.database, &of.parent)
                .ok_or_else(|| err!(Internal, "parent \"{}\" of partition \"{}\" is missing", of.parent, root.name))?;
        }
        let tree = self.partition_tree(&root)?;
        let at = tree
            .nodes
            .iter()
            .position(|n| n.def.id == def.id)
            .ok_or_else(|| err!(Internal, "partition \"{}\" is not in its tree", def.name))?;
        Ok((tree, at))
    }

    /// A partitioned table's (or a partition's) rows: each leaf's scan in
    /// the table's column order, with the leaf's OID as the system column
    /// `tableoid`, appended in PostgreSQL's partition order.
    pub(super) fn plan_partitioned(&self, def: &TableDef) -> Result<(LogicalPlan, Vec<PlanColumn>)> {
        let leaves = if def.partition.key.is_some() { self.partition_leaves(def)? } else { vec![def.clone()] };
        let sources: Vec<TableDef> = if leaves.is_empty() { vec![def.clone()] } else { leaves };
        self.plan_union_of(def, &sources)
    }

    /// The rows of `sources` (tables with `def`'s columns, and maybe more)
    /// in `def`'s columns (by name) with each source's OID as `tableoid`,
    /// appended in order.
    pub(super) fn plan_union_of(&self, def: &TableDef, sources: &[TableDef]) -> Result<(LogicalPlan, Vec<PlanColumn>)> {
        let mut cols: Vec<PlanColumn> =
            def.columns.iter().map(|c| PlanColumn { name: c.name.clone(), qualifier: None, ty: c.ty }).collect();
        cols.push(PlanColumn { name: "tableoid".into(), qualifier: super::system_qualifier(None), ty: SqlType::Oid });
        let mut plan: Option<LogicalPlan> = None;
        for leaf in sources {
            let (scan, _) = self.table_scan(leaf)?;
            let mut exprs = Vec::new();
            for c in &def.columns {
                let i = leaf.column_index(&c.name).ok_or_else(|| err!(Internal, "table \"{}\" has no column \"{}\"", leaf.name, c.name))?;
                let e = Expr::Column { index: i, ty: leaf.columns[i].ty };
                exprs.push(if leaf.columns[i].ty == c.ty { e } else { coerce(e, c.ty)? });
            }
            exprs.push(Expr::lit(Value::Int(super::system::table_oid(leaf.id)), SqlType::Oid));
            let p = LogicalPlan::Project { input: Box::new(scan), exprs, columns: cols.clone() };
            plan = Some(match plan {
                None => p,
                Some(l) => LogicalPlan::SetOp { left: Box::new(l), right: Box::new(p), kind: SetOpKind::Union, all: true },
            });
        }
        let plan = plan.ok_or_else(|| err!(Internal, "table \"{}\" has nothing to scan", def.name))?;
        Ok((plan, cols))
    }

    /// The leaves of a partitioned table, in PostgreSQL's order.
    pub fn partition_leaves(&self, def: &TableDef) -> Result<Vec<TableDef>> {
        let tree = self.partition_tree(def)?;
        Ok(tree.leaves(0).into_iter().map(|i| tree.nodes[i].def.clone()).collect())
    }
}

impl Tree {
    /// The leaves under a node, depth first in bound order.
    pub fn leaves(&self, at: usize) -> Vec<usize> {
        let n = &self.nodes[at];
        if n.key.is_none() {
            return vec![at];
        }
        n.children.iter().flat_map(|&c| self.leaves(c)).collect()
    }

    /// Rows of `batch` (the tree's columns) grouped by leaf, for a write
    /// into node `target`: rows that fall outside `target` violate its
    /// partition constraint; rows no partition below it takes find none.
    pub fn route(&self, target: usize, batch: &RecordBatch, ctx: &crate::exec::ExecCtx) -> Result<Vec<(usize, Vec<u32>)>> {
        let mut keys: Vec<Option<Vec<ArrayRef>>> = vec![None; self.nodes.len()];
        let mut hashes: Vec<Vec<ArrayRef>> = vec![vec![]; self.nodes.len()];
        for (i, n) in self.nodes.iter().enumerate() {
            if let Some(k) = &n.key {
                keys[i] = Some(k.exprs.iter().map(|e| e.eval(batch, ctx)).collect::<Result<_>>()?);
                hashes[i] = k.hashes.iter().map(|e| e.eval(batch, ctx)).collect::<Result<_>>()?;
            }
        }
        let mut out: Vec<(usize, Vec<u32>)> = Vec::new();
        for row in 0..batch.num_rows() {
            match self.route_row(target, &keys, &hashes, row) {
                Routed::Leaf(leaf, true) => match out.iter_mut().find(|(l, _)| *l == leaf) {
                    Some((_, rows)) => rows.push(row as u32),
                    None => out.push((leaf, vec![row as u32])),
                },
                Routed::Leaf(_, false) | Routed::NoPartition(_, false) => {
                    return Err(err!(
                        CheckViolation,
                        "new row for relation \"{}\" violates partition constraint",
                        self.nodes[target].def.name
                    )
                    .with_detail(format!("Failing row contains ({}).", row_text(batch, row))));
                }
                Routed::NoPartition(at, true) => {
                    let key = self.nodes[at].key.as_ref().expect("partitioned");
                    let vals: Vec<String> = keys[at]
                        .as_ref()
                        .expect("evaluated")
                        .iter()
                        .map(|a| value_text(&crate::types::value_at(a.as_ref(), row)))
                        .collect();
                    return Err(err!(CheckViolation, "no partition of relation \"{}\" found for row", self.nodes[at].def.name)
                        .with_detail(format!(
                            "Partition key of the failing row contains ({}) = ({}).",
                            key.text.join(", "),
                            vals.join(", ")
                        )));
                }
            }
        }
        Ok(out)
    }

    fn route_row(&self, target: usize, keys: &[Option<Vec<ArrayRef>>], hashes: &[Vec<ArrayRef>], row: usize) -> Routed {
        let mut at = 0;
        let mut inside = target == 0;
        loop {
            let n = &self.nodes[at];
            let Some(arrays) = &keys[at] else { return Routed::Leaf(at, inside) };
            let types = n.key.as_ref().map(|k| k.types()).unwrap_or_default();
            let key: Vec<Value> = if n.key.as_ref().is_some_and(|k| k.strategy == Strategy::Hash) {
                vec![Value::Int(row_hash(&hashes[at], row) as i64)]
            } else {
                arrays.iter().zip(types).map(|(a, ty)| comparable(crate::types::value_at(a.as_ref(), row), ty)).collect()
            };
            let next = n
                .children
                .iter()
                .copied()
                .find(|&c| self.nodes[c].bound.as_ref().is_some_and(|b| b.accepts(&key)))
                .or_else(|| n.children.iter().copied().find(|&c| matches!(self.nodes[c].bound, Some(EvalBound::Default))));
            match next {
                Some(c) => {
                    at = c;
                    inside |= at == target;
                }
                None => return Routed::NoPartition(at, inside),
            }
        }
    }
}

/// A batch of one table of a tree in another's column order (by name).
pub fn reorder(batch: &RecordBatch, from: &TableDef, to: &TableDef) -> Result<RecordBatch> {
    if from.columns.iter().map(|c| (&c.name, c.ty)).eq(to.columns.iter().map(|c| (&c.name, c.ty))) {
        return Ok(batch.clone());
    }
    let mut cols = Vec::with_capacity(to.columns.len());
    for c in &to.columns {
        let i = from.column_index(&c.name).ok_or_else(|| err!(Internal, "table \"{}\" has no column \"{}\"", from.name, c.name))?;
        cols.push(crate::exec::expr::cast_array(batch.column(i), from.columns[i].ty, c.ty)?);
    }
    Ok(RecordBatch::try_new_with_options(
        super::region_descriptor(to).schema,
        cols,
        &RecordBatchOptions::new().with_row_count(Some(batch.num_rows())),
    )?)
}

/// A row as PostgreSQL's "Failing row contains (…)" shows it.
pub fn row_text(batch: &RecordBatch, row: usize) -> String {
    batch.columns().iter().map(|a| value_text(&crate::types::value_at(a.as_ref(), row))).collect::<Vec<_>>().join(", ")
}

/// Would a new bound overlap one of the siblings' (PostgreSQL's
/// check_new_partition_bound)? Returns the sibling it overlaps.
pub fn overlapping<'a>(new: &EvalBound, siblings: &'a [(String, EvalBound)]) -> Option<&'a str> {
    for (name, b) in siblings {
        let hit = match (new, b) {
            (EvalBound::Default, EvalBound::Default) => true,
            (EvalBound::List { values: a, null: na }, EvalBound::List { values: b, null: nb }) => {
                (*na && *nb) || a.iter().any(|x| b.iter().any(|y| cmp_values(x, y) == Ordering::Equal))
            }
            (EvalBound::Range { from: f1, to: t1 }, EvalBound::Range { from: f2, to: t2 }) => {
                cmp_bounds(f1, t2) == Ordering::Less && cmp_bounds(f2, t1) == Ordering::Less
            }
            // Moduli divide one another (checked first): the smaller one
            // decides which hashes both take.
            (EvalBound::Hash { modulus: m1, remainder: r1 }, EvalBound::Hash { modulus: m2, remainder: r2 }) => {
                let m = (*m1).min(*m2);
                r1 % m == r2 % m
            }
            _ => false,
        };
        if hit {
            return Some(name);
        }
    }
    None
}

/// Is a range bound empty (lower ≥ upper)?
pub fn empty_range(b: &EvalBound) -> bool {
    matches!(b, EvalBound::Range { from, to } if cmp_bounds(from, to) != Ordering::Less)
}
