//! Declarative partitioning's statements and writes: CREATE TABLE …
//! PARTITION BY, CREATE TABLE … PARTITION OF … FOR VALUES / DEFAULT,
//! ALTER TABLE … ATTACH / DETACH PARTITION, and the write of rows into a
//! partitioned table or a partition (each row routed to its leaf, or
//! checked against the partition's constraint). Each partition is an
//! ordinary weir table with its own regions; the catalog records the tree
//! (`catalog/partition.rs`), the planner evaluates it (`planner/partition.rs`).
//!
//! May import `planner`, `catalog`, `storage`, `exec`; not `server`.

use std::sync::Arc;

use arrow::array::{Array, AsArray, RecordBatch, UInt32Array};
use sqlparser::ast;

use super::{QueryResult, Session};
use crate::catalog::partition::{Bound, PartitionKey, PartitionOf, RangeDatum, Strategy};
use crate::catalog::trigger::TriggerOp;
use crate::catalog::TableDef;
use crate::error::Result;
use crate::planner::partition::{empty_range, overlapping, reorder, EvalBound};
use crate::planner::row_security::{PolicyCheck, PolicyCommand};
use crate::planner::{ident, Planner};
use crate::storage::Region;
use crate::{bail, err};

/// `PARTITION BY RANGE (…)` as sqlparser gives it (a call of `range`,
/// `list` or `hash`) and each element's operator class → the key.
pub fn parse_key(e: &ast::Expr, opclasses: &[Option<ast::ObjectName>]) -> Result<PartitionKey> {
    let ast::Expr::Function(f) = e else { bail!(Syntax, "syntax error at or near \"{e}\"") };
    let strategy = match f.name.to_string().to_lowercase().as_str() {
        "range" => Strategy::Range,
        "list" => Strategy::List,
        "hash" => Strategy::Hash,
        other => bail!(InvalidParameterValue, "unrecognized partitioning strategy \"{other}\""),
    };
    let ast::FunctionArguments::List(list) = &f.args else { bail!(Syntax, "syntax error at or near \"{e}\"") };
    let mut exprs = Vec::new();
    for a in &list.args {
        match a {
            ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(x)) => exprs.push(match x {
                ast::Expr::Identifier(i) => format!("\"{}\"", ident(i).replace('"', "\"\"")),
                other => other.to_string(),
            }),
            _ => bail!(Syntax, "syntax error at or near \"{a}\""),
        }
    }
    if exprs.is_empty() {
        bail!(Syntax, "syntax error at or near \")\"");
    }
    if strategy == Strategy::List && exprs.len() > 1 {
        bail!(InvalidTableDefinition, "cannot use \"list\" partition strategy with more than one column");
    }
    let mut classes = Vec::new();
    for c in opclasses {
        classes.push(match c {
            Some(n) => Some(crate::planner::object_name(n)?.1),
            None => None,
        });
    }
    Ok(PartitionKey { strategy, exprs, opclasses: classes })
}

/// The key's check at CREATE: its columns exist, its expressions bind.
pub fn check_key(planner: &Planner, def: &TableDef) -> Result<()> {
    let key = planner.partition_key(def)?.expect("partitioned");
    for e in &key.exprs {
        if e.has_subquery() {
            bail!(FeatureNotSupported, "cannot use subquery in partition key expression");
        }
    }
    Ok(())
}

/// `FOR VALUES …` / `DEFAULT` → a bound of the parent's strategy.
pub fn parse_bound(parent: &TableDef, child: &str, fv: &ast::ForValues) -> Result<Bound> {
    let key = parent.partition.key.as_ref().ok_or_else(|| err!(WrongObjectType, "table \"{}\" is not partitioned", parent.name))?;
    let wrong = |what: &str| err!(InvalidTableDefinition, "invalid bound specification for a {what} partition");
    Ok(match fv {
        ast::ForValues::Default if key.strategy == Strategy::Hash => {
            bail!(InvalidTableDefinition, "a hash-partitioned table may not have a default partition")
        }
        ast::ForValues::Default => Bound::Default,
        ast::ForValues::In(v) => {
            if key.strategy != Strategy::List {
                return Err(wrong(key.strategy.name()));
            }
            Bound::List(v.iter().map(|e| e.to_string()).collect())
        }
        ast::ForValues::From { from, to } => {
            if key.strategy != Strategy::Range {
                return Err(wrong(key.strategy.name()));
            }
            let datums = |v: &[ast::PartitionBoundValue], which: &str| -> Result<Vec<RangeDatum>> {
                if v.len() != key.exprs.len() {
                    bail!(InvalidTableDefinition, "{which} must specify exactly one value per partitioning column");
                }
                let out: Vec<RangeDatum> = v
                    .iter()
                    .map(|d| match d {
                        ast::PartitionBoundValue::MinValue => RangeDatum::MinValue,
                        ast::PartitionBoundValue::MaxValue => RangeDatum::MaxValue,
                        ast::PartitionBoundValue::Expr(e) => RangeDatum::Value(e.to_string()),
                    })
                    .collect();
                // After MINVALUE / MAXVALUE every datum must be one too.
                let mut seen: Option<&RangeDatum> = None;
                for d in &out {
                    match (seen, d) {
                        (None, RangeDatum::MinValue | RangeDatum::MaxValue) => seen = Some(d),
                        (Some(RangeDatum::MinValue), RangeDatum::MinValue) | (Some(RangeDatum::MaxValue), RangeDatum::MaxValue) => {}
                        (Some(RangeDatum::MinValue), _) => {
                            bail!(InvalidTableDefinition, "every bound following MINVALUE must also be MINVALUE")
                        }
                        (Some(_), _) => bail!(InvalidTableDefinition, "every bound following MAXVALUE must also be MAXVALUE"),
                        (None, _) => {}
                    }
                }
                Ok(out)
            };
            let _ = child;
            Bound::Range { from: datums(from, "FROM")?, to: datums(to, "TO")? }
        }
        ast::ForValues::With { modulus, remainder } => {
            if key.strategy != Strategy::Hash {
                return Err(wrong(key.strategy.name()));
            }
            if *modulus == 0 {
                bail!(InvalidTableDefinition, "modulus for hash partition must be an integer value greater than zero");
            }
            if remainder >= modulus {
                bail!(InvalidTableDefinition, "remainder for hash partition must be less than modulus");
            }
            Bound::Hash { modulus: *modulus, remainder: *remainder }
        }
    })
}

/// Check a new partition's bound against its siblings (PostgreSQL's
/// errors), and, when a default partition exists, that none of its rows
/// belongs to the new one.
pub fn check_bound(planner: &Planner, parent: &TableDef, child: &str, bound: &Bound) -> Result<()> {
    let key = planner.partition_key(parent)?.expect("partitioned");
    let new = planner.eval_bound(&key, bound)?;
    if empty_range(&new) {
        return Err(err!(InvalidObjectDefinition, "empty range bound specified for partition \"{child}\"").with_detail(match bound {
            Bound::Range { from, to } => {
                let f = Bound::Range { from: from.clone(), to: to.clone() }.sql();
                let inner = f.trim_start_matches("FOR VALUES FROM ");
                let (lo, hi) = inner.split_once(" TO ").unwrap_or((inner, ""));
                format!("Specified lower bound {lo} is greater than or equal to upper bound {hi}.")
            }
            _ => String::new(),
        }));
    }
    let mut siblings = Vec::new();
    for c in planner.catalog.partitions(&parent.database, &parent.name) {
        if c.name == child {
            continue;
        }
        let b = c.partition.of.as_ref().map(|o| o.bound.clone()).unwrap_or(Bound::Default);
        siblings.push((c.name.clone(), planner.eval_bound(&key, &b)?));
    }
    if let EvalBound::Hash { modulus, remainder } = new {
        check_hash_modulus(modulus, remainder, &siblings)?;
    }
    if let Some(other) = overlapping(&new, &siblings) {
        if matches!(new, EvalBound::Default) {
            bail!(InvalidObjectDefinition, "partition \"{child}\" conflicts with existing default partition \"{other}\"");
        }
        bail!(InvalidObjectDefinition, "partition \"{child}\" would overlap partition \"{other}\"");
    }
    Ok(())
}

/// PostgreSQL's rule for the moduli of a hash-partitioned table's
/// partitions: each one divides the next larger one, so every row's hash
/// picks one partition.
fn check_hash_modulus(modulus: u64, remainder: u64, siblings: &[(String, EvalBound)]) -> Result<()> {
    // In PostgreSQL's bound order (modulus, then remainder): the bound at or
    // before the new one and the next one of a larger modulus.
    let mut bounds: Vec<(u64, u64, &str)> = siblings
        .iter()
        .filter_map(|(n, b)| match b {
            EvalBound::Hash { modulus, remainder } => Some((*modulus, *remainder, n.as_str())),
            _ => None,
        })
        .collect();
    bounds.sort_by_key(|(m, r, _)| (*m, *r));
    let fail = |detail: String| {
        err!(InvalidObjectDefinition, "every hash partition modulus must be a factor of the next larger modulus").with_detail(detail)
    };
    let not_factor =
        |m: u64, n: &str| fail(format!("The new modulus {modulus} is not a factor of {m}, the modulus of existing partition \"{n}\"."));
    let at = bounds.iter().rposition(|(m, r, _)| (*m, *r) <= (modulus, remainder));
    match at {
        None => {
            if let Some((m, _, n)) = bounds.first() {
                if m % modulus != 0 {
                    return Err(not_factor(*m, n));
                }
            }
        }
        Some(i) => {
            let (m, _, n) = bounds[i];
            if modulus % m != 0 {
                return Err(fail(format!("The new modulus {modulus} is not divisible by {m}, the modulus of existing partition \"{n}\".")));
            }
            if let Some((m, _, n)) = bounds.get(i + 1) {
                if m % modulus != 0 {
                    return Err(not_factor(*m, n));
                }
            }
        }
    }
    Ok(())
}

/// After a partition was added next to a default one: the default one's
/// rows must still belong to it.
fn check_default_rows(planner: &Planner, parent: &TableDef) -> Result<()> {
    let Some(default) = planner
        .catalog
        .partitions(&parent.database, &parent.name)
        .into_iter()
        .find(|c| c.partition.of.as_ref().is_some_and(|o| o.bound == Bound::Default))
    else {
        return Ok(());
    };
    if let Err(e) = check_rows(planner, &default) {
        if e.kind == crate::error::ErrorKind::CheckViolation {
            bail!(CheckViolation, "updated partition constraint for default partition \"{}\" would be violated by some row", default.name);
        }
        return Err(e);
    }
    Ok(())
}

/// Every stored row of a table (a partition) routes into it.
fn check_rows(planner: &Planner, def: &TableDef) -> Result<()> {
    let (tree, at) = planner.partition_root(def)?;
    for leaf in tree.leaves(at) {
        let ldef = &tree.nodes[leaf].def;
        for r in planner.regions(ldef)? {
            let rows = super::dml::scan_region(planner, &r, crate::storage::ScanRequest::default())?;
            for b in rows {
                let b = b.project(&(0..ldef.columns.len()).collect::<Vec<_>>())?;
                let b = reorder(&b, ldef, &tree.nodes[0].def)?;
                tree.route(at, &b, &planner.ctx)?;
            }
        }
    }
    Ok(())
}

/// CREATE TABLE … PARTITION OF parent …: the parent's columns (with the
/// NOT NULL / DEFAULT the statement adds), the bound checked against the
/// siblings, its own key when it says PARTITION BY.
pub fn create_partition_of(s: &mut Session, ct: &ast::CreateTable) -> Result<QueryResult> {
    let engine = s.engine.clone();
    let cat = &engine.catalog;
    let planner = s.planner(Default::default());
    let parent_name = ct.partition_of.as_ref().expect("PARTITION OF");
    let parent = planner.table_named(parent_name)?;
    let rel = crate::planner::relation(cat, &s.database, &ct.name)?;
    let database = rel.database()?;
    let name = rel.name.clone();
    if database != parent.database {
        bail!(FeatureNotSupported, "a partition must be in its parent's database");
    }
    if cat.table(&database, &name).is_some() || cat.view(&database, &name).is_some() {
        if ct.if_not_exists {
            return Ok(QueryResult::Command("CREATE TABLE".into()));
        }
        bail!(DuplicateTable, "relation \"{name}\" already exists");
    }
    if parent.partition.key.is_none() {
        bail!(WrongObjectType, "\"{}\" is not partitioned", parent.name);
    }
    let fv = ct.for_values.as_ref().ok_or_else(|| err!(Syntax, "syntax error: PARTITION OF needs FOR VALUES or DEFAULT"))?;
    let bound = parse_bound(&parent, &name, fv)?;
    check_bound(&planner, &parent, &name, &bound)?;
    let mut columns = parent.columns.clone();
    for c in &ct.columns {
        let n = ident(&c.name);
        let Some(col) = columns.iter_mut().find(|x| x.name == n) else {
            bail!(UndefinedColumn, "column \"{n}\" does not exist");
        };
        for o in &c.options {
            match &o.option {
                ast::ColumnOption::NotNull => col.nullable = false,
                ast::ColumnOption::Null => {}
                ast::ColumnOption::Default(e) => col.default = Some(e.to_string()),
                other => bail!(FeatureNotSupported, "column option {other} of a partition is not supported"),
            }
        }
    }
    if !ct.constraints.is_empty() {
        bail!(FeatureNotSupported, "constraints on a partition are not supported");
    }
    let mut def = parent.clone();
    def.id = cat.next_table_id()?;
    def.name = name.clone();
    def.columns = columns;
    def.inherits = vec![];
    def.checks = super::inherit::inherited_checks(std::slice::from_ref(&parent));
    def.regions = 1;
    def.partition.key = match &ct.partition_by {
        Some(k) => Some(parse_key(k, &[])?),
        None => None,
    };
    def.partition.of = Some(PartitionOf { parent: parent.name.clone(), bound: bound.clone() });
    if def.partition.key.is_some() {
        check_key(&planner, &def)?;
    }
    drop(planner);
    engine.open_table_regions(&def)?;
    cat.create_table(def.clone())?;
    if bound != Bound::Default {
        let planner = s.planner(Default::default());
        if let Err(e) = check_default_rows(&planner, &parent) {
            drop(planner);
            drop_tree(s, &def)?;
            return Err(e);
        }
    }
    Ok(QueryResult::Command("CREATE TABLE".into()))
}

/// Drop a table and, when it is partitioned, its partitions first.
pub fn drop_tree(s: &Session, def: &TableDef) -> Result<()> {
    let cat = &s.engine.catalog;
    if def.partition.key.is_some() {
        for c in cat.partitions(&def.database, &def.name) {
            drop_tree(s, &c)?;
        }
    }
    if cat.table(&def.database, &def.name).is_some_and(|d| d.id == def.id) {
        cat.drop_table(&def.database, &def.name)?;
        for r in 0..def.regions.max(1) {
            s.engine.storage.drop_region(crate::storage::region_id(def.id, r))?;
        }
    }
    Ok(())
}

/// A table and the partitions under it, depth first (TRUNCATE's targets).
pub fn with_partitions(s: &Session, def: &TableDef) -> Vec<TableDef> {
    let mut out = vec![def.clone()];
    if def.partition.key.is_some() {
        for c in s.engine.catalog.partitions(&def.database, &def.name) {
            out.extend(with_partitions(s, &c));
        }
    }
    out
}

/// ALTER TABLE parent ATTACH PARTITION child FOR VALUES …
pub fn attach(s: &mut Session, parent: &TableDef, child: &ast::ObjectName, fv: &ast::ForValues) -> Result<QueryResult> {
    let engine = s.engine.clone();
    let cat = &engine.catalog;
    let planner = s.planner(Default::default());
    let def = planner.table_named(child)?;
    if parent.partition.key.is_none() {
        bail!(WrongObjectType, "table \"{}\" is not partitioned", parent.name);
    }
    if def.partition.of.is_some() {
        bail!(ObjectNotInPrerequisiteState, "\"{}\" is already a partition", def.name);
    }
    if def.id == parent.id {
        bail!(DuplicateTable, "circular inheritance not allowed");
    }
    for c in &def.columns {
        match parent.columns.iter().find(|p| p.name == c.name) {
            None => {
                bail!(DatatypeMismatch, "table \"{}\" contains column \"{}\" not found in parent \"{}\"", def.name, c.name, parent.name)
            }
            Some(p) if p.ty != c.ty => {
                bail!(DatatypeMismatch, "child table \"{}\" has different type for column \"{}\"", def.name, c.name)
            }
            Some(p) if !p.nullable && c.nullable => {
                bail!(DatatypeMismatch, "column \"{}\" in child table must be marked NOT NULL", c.name)
            }
            _ => {}
        }
    }
    for p in &parent.columns {
        if def.column_index(&p.name).is_none() {
            bail!(DatatypeMismatch, "child table is missing column \"{}\"", p.name);
        }
    }
    let bound = parse_bound(parent, &def.name, fv)?;
    check_bound(&planner, parent, &def.name, &bound)?;
    drop(planner);
    let mut new = def.clone();
    new.partition.of = Some(PartitionOf { parent: parent.name.clone(), bound: bound.clone() });
    // The parent's CHECK constraints become the partition's too.
    for c in super::inherit::inherited_checks(std::slice::from_ref(parent)) {
        if !new.checks.iter().any(|x| x.name == c.name) {
            new.checks.push(c);
        }
    }
    cat.replace_table(new.clone())?;
    let planner = s.planner(Default::default());
    let checked = check_rows(&planner, &new).map_err(|e| {
        if e.kind == crate::error::ErrorKind::CheckViolation {
            err!(CheckViolation, "partition constraint of relation \"{}\" is violated by some row", def.name)
        } else {
            e
        }
    });
    let checked = checked.and_then(|_| if bound != Bound::Default { check_default_rows(&planner, parent) } else { Ok(()) });
    drop(planner);
    if let Err(e) = checked {
        cat.replace_table(def)?;
        return Err(e);
    }
    Ok(QueryResult::Command("ALTER TABLE".into()))
}

/// ALTER TABLE parent DETACH PARTITION child.
pub fn detach(s: &mut Session, parent: &TableDef, child: &ast::ObjectName) -> Result<QueryResult> {
    let planner = s.planner(Default::default());
    let def = planner.table_named(child)?;
    drop(planner);
    if def.partition.of.as_ref().is_none_or(|o| o.parent != parent.name) {
        bail!(UndefinedTable, "relation \"{}\" is not a partition of relation \"{}\"", def.name, parent.name);
    }
    let mut new = def.clone();
    new.partition.of = None;
    s.engine.catalog.replace_table(new)?;
    Ok(QueryResult::Command("ALTER TABLE".into()))
}

/// The partitions to rename along with their parent.
pub fn rename_parent(s: &Session, old: &TableDef, new_name: &str) -> Result<()> {
    for mut c in s.engine.catalog.partitions(&old.database, &old.name) {
        if let Some(of) = c.partition.of.as_mut() {
            of.parent = new_name.to_string();
        }
        s.engine.catalog.replace_table(c)?;
    }
    Ok(())
}

/// 42501 unless every row passes the row-level security checks (rows in `def`'s columns).
fn enforce_policies(planner: &Planner, def: &TableDef, checks: &[PolicyCheck], rows: &RecordBatch) -> Result<()> {
    if rows.num_rows() == 0 {
        return Ok(());
    }
    for c in checks {
        let a = c.expr.eval(rows, &planner.ctx)?;
        let Some(b) = a.as_boolean_opt() else { continue };
        // NULL fails, as a WITH CHECK OPTION does.
        if (0..b.len()).any(|i| !b.is_valid(i) || !b.value(i)) {
            return Err(match &c.policy {
                Some(p) => err!(InsufficientPrivilege, "new row violates row-level security policy \"{p}\" for table \"{}\"", def.name),
                None => err!(InsufficientPrivilege, "new row violates row-level security policy for table \"{}\"", def.name),
            });
        }
    }
    Ok(())
}

/// Write rows into a table: a partitioned table's rows go to their leaves,
/// a partition's are checked against its constraint; an ordinary table's
/// are written as they are. Row triggers for INSERT fire on the table the
/// rows land in (a leaf's own, after routing; for an UPDATE, on a leaf
/// other than the one the rows came from: they moved). Returns the rows
/// written, in `def`'s columns, when triggers changed or skipped any.
pub fn write(
    s: &Session,
    planner: &Planner,
    def: &TableDef,
    regions: &[Arc<Region>],
    batch: &RecordBatch,
    cause: Cause,
) -> Result<Option<RecordBatch>> {
    let fires = |ldef: &TableDef| match cause {
        Cause::Insert => true,
        Cause::Update { from } => ldef.id != from,
    };
    // Row-level security's WITH CHECK, on the rows BEFORE triggers made.
    let policy_cmd = match cause {
        Cause::Insert => PolicyCommand::Insert,
        Cause::Update { .. } => PolicyCommand::Update,
    };
    let policies = planner.policy_checks(def, policy_cmd)?;
    if def.partition.is_none() {
        if !fires(def) || def.triggers.is_empty() {
            enforce_policies(planner, def, &policies, batch)?;
            super::check::enforce(planner, def, batch)?;
            super::txn::write_rows(s, def, regions, batch)?;
            return Ok(None);
        }
        // CHECK constraints hold for the rows BEFORE triggers made.
        let changed = super::trigger::before_row(s, def, TriggerOp::Insert, None, Some(batch))?.and_then(|(_, b)| b);
        let rows = changed.as_ref().unwrap_or(batch);
        enforce_policies(planner, def, &policies, rows)?;
        super::check::enforce(planner, def, rows)?;
        super::txn::write_rows(s, def, regions, rows)?;
        super::trigger::after_row(s, def, TriggerOp::Insert, None, Some(rows))?;
        return Ok(changed);
    }
    let (tree, at) = planner.partition_root(def)?;
    let batch = batch.project(&(0..def.columns.len()).collect::<Vec<_>>())?;
    // Routed in the root's column order, written in each leaf's.
    let root = &tree.nodes[0].def;
    let batch = reorder(&batch, def, root)?;
    let mut written: Vec<RecordBatch> = Vec::new();
    let mut triggered = false;
    for (leaf, rows) in tree.route(at, &batch, &planner.ctx)? {
        let ldef = &tree.nodes[leaf].def;
        let idx = UInt32Array::from(rows);
        let part = arrow::compute::take_record_batch(&batch, &idx)?;
        let mut part = reorder(&part, root, ldef)?;
        let fire = fires(ldef) && !ldef.triggers.is_empty();
        if fire {
            if let Some((_, Some(b))) = super::trigger::before_row(s, ldef, TriggerOp::Insert, None, Some(&part))? {
                // A trigger's change must keep the row in its partition.
                tree.route(leaf, &reorder(&b, ldef, root)?, &planner.ctx)?;
                part = b;
                triggered = true;
            }
        }
        for (i, c) in ldef.columns.iter().enumerate() {
            if !c.nullable && part.column(i).null_count() > 0 {
                return Err(err!(
                    NotNullViolation,
                    "null value in column \"{}\" of relation \"{}\" violates not-null constraint",
                    c.name,
                    ldef.name
                ));
            }
        }
        if !policies.is_empty() {
            enforce_policies(planner, def, &policies, &reorder(&part, ldef, def)?)?;
        }
        super::check::enforce(planner, ldef, &part)?;
        let lregions = planner.regions(ldef)?;
        super::txn::write_rows(s, ldef, &lregions, &part)?;
        if fire {
            super::trigger::after_row(s, ldef, TriggerOp::Insert, None, Some(&part))?;
        }
        written.push(reorder(&part, ldef, def)?);
    }
    if !triggered {
        return Ok(None);
    }
    let schema = crate::planner::region_descriptor(def).schema;
    let written: Vec<RecordBatch> = written
        .into_iter()
        .map(|b| {
            RecordBatch::try_new_with_options(
                schema.clone(),
                b.columns().to_vec(),
                &arrow::array::RecordBatchOptions::new().with_row_count(Some(b.num_rows())),
            )
        })
        .collect::<std::result::Result<_, _>>()?;
    Ok(Some(arrow::compute::concat_batches(&schema, &written)?))
}

/// The rows of `batch` (new rows of an UPDATE of `def`, whose old rows were
/// in table `from`) that route to another partition.
pub fn moved_rows(planner: &Planner, def: &TableDef, batch: &RecordBatch, from: u32) -> Result<Vec<u32>> {
    let (tree, at) = planner.partition_root(def)?;
    let batch = batch.project(&(0..def.columns.len()).collect::<Vec<_>>())?;
    let root = &tree.nodes[0].def;
    let batch = reorder(&batch, def, root)?;
    let mut moved = Vec::new();
    for (leaf, rows) in tree.route(at, &batch, &planner.ctx)? {
        if tree.nodes[leaf].def.id != from {
            moved.extend(rows);
        }
    }
    moved.sort_unstable();
    Ok(moved)
}

/// Why rows are written (which row triggers fire).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    Insert,
    /// The new rows of an UPDATE whose old rows were in table `from`.
    Update {
        from: u32,
    },
}

/// The table a region belongs to (a region id is the table id, then the
/// region's number).
pub fn table_of(region: &Region) -> u32 {
    (region.id >> 32) as u32
}
