//! DDL and catalog statements: databases, tables (weir's CREATE TABLE
//! with TIME INDEX and GreptimeDB's clauses), views, indexes, SHOW,
//! DESCRIBE, and ADMIN functions. Table names may name another database
//! (`db.t`).

use std::sync::Arc;

use arrow::array::{ArrayRef, RecordBatch, StringArray};
use sqlparser::ast::{self, Statement};

use super::{QueryResult, Session};
use crate::catalog::{ColumnDef, IndexDef, TableDef, ViewDef};
use crate::error::Result;
use crate::exec::plan::{arrow_schema, PlanColumn};
use crate::parser::{Admin, CreateTable};
use crate::planner::{ident, object_name, relation, Params, Relation};
use crate::storage::region_id;
use crate::types::{parse_interval, SqlType};
use crate::{bail, err};

pub(super) fn text_rows(names: &[&str], rows: Vec<Vec<String>>) -> Result<QueryResult> {
    let cols: Vec<PlanColumn> = names.iter().map(|n| PlanColumn::new(*n, SqlType::Text)).collect();
    let arrays: Vec<ArrayRef> =
        (0..names.len()).map(|i| Arc::new(StringArray::from(rows.iter().map(|r| r[i].clone()).collect::<Vec<_>>())) as ArrayRef).collect();
    let b = RecordBatch::try_new(arrow_schema(&cols), arrays)?;
    Ok(QueryResult::Rows { columns: cols, batches: vec![b] })
}

pub fn execute(s: &mut Session, stmt: &Statement) -> Result<QueryResult> {
    let engine = s.engine.clone();
    let cat = &engine.catalog;
    match stmt {
        Statement::CreateTable(ct) => create_sql_table(s, ct),
        Statement::CreateSchema { schema_name, if_not_exists, .. } => super::schema::create(s, schema_name, *if_not_exists),
        Statement::Drop { object_type: ast::ObjectType::Schema, if_exists, names, cascade, .. } => {
            super::schema::drop_schemas(s, *if_exists, *cascade, names)
        }
        Statement::CreateSequence { temporary, if_not_exists, name, sequence_options } => {
            super::sequence::create(s, *if_not_exists, *temporary, name, sequence_options)
        }
        Statement::Drop { object_type: ast::ObjectType::Sequence, if_exists, names, cascade, .. } => {
            super::sequence::drop_sequences(s, *if_exists, *cascade, names)
        }
        Statement::CreateType { name, representation } => super::user_type::create_type(s, name, representation.as_ref()),
        Statement::CreateDomain(cd) => super::user_type::create_domain(s, cd),
        Statement::Drop { object_type: ast::ObjectType::Type, if_exists, names, .. } => super::user_type::drop(s, names, *if_exists, false),
        Statement::DropDomain(d) => super::user_type::drop(s, std::slice::from_ref(&d.name), d.if_exists, true),
        Statement::CreateDatabase { db_name, if_not_exists, .. } => {
            let name = object_name(db_name)?.1;
            if cat.database_exists(&name) && *if_not_exists {
                return Ok(QueryResult::Command("CREATE DATABASE".into()));
            }
            cat.create_database(&name)?;
            Ok(QueryResult::Command("CREATE DATABASE".into()))
        }
        Statement::Drop { object_type, if_exists, names, cascade, .. } => {
            let tag = match object_type {
                ast::ObjectType::Table => "DROP TABLE",
                ast::ObjectType::View => "DROP VIEW",
                ast::ObjectType::Index => "DROP INDEX",
                ast::ObjectType::Database => "DROP DATABASE",
                other => bail!(FeatureNotSupported, "DROP {other} is not supported"),
            };
            // Every table named must exist before any is dropped; one may then
            // be gone with an earlier one's partitions (`DROP TABLE p, p1`).
            if *object_type == ast::ObjectType::Table && !*if_exists {
                for n in names {
                    let rel = relation(cat, &s.database, n)?;
                    if cat.table(&rel.database()?, &rel.name).is_none() {
                        bail!(UndefinedTable, "table \"{}\" does not exist", rel.display());
                    }
                }
            }
            for n in names {
                let rel = relation(cat, &s.database, n)?;
                let name = rel.name.clone();
                match object_type {
                    ast::ObjectType::Table => {
                        let db = match rel.database() {
                            Err(_) if *if_exists => continue,
                            r => r?,
                        };
                        let Some(def) = cat.table(&db, &name) else { continue };
                        let named: Vec<String> = names.iter().filter_map(|n| relation(cat, &s.database, n).ok()).map(|r| r.name).collect();
                        for child in super::inherit::dependents(s, &def, *cascade, &named)?.into_iter().rev() {
                            super::partition::drop_tree(s, &child)?;
                        }
                        super::partition::drop_tree(s, &def)?;
                    }
                    ast::ObjectType::View => {
                        let db = match rel.database() {
                            Err(_) if *if_exists => continue,
                            r => r?,
                        };
                        if cat.view(&db, &name).is_none() && *if_exists {
                            continue;
                        }
                        cat.drop_view(&db, &name)?;
                    }
                    ast::ObjectType::Index => {
                        let db = match rel.database() {
                            Err(_) if *if_exists => continue,
                            r => r?,
                        };
                        if let Err(e) = cat.drop_index(&db, &name) {
                            if !*if_exists {
                                return Err(e);
                            }
                        }
                    }
                    ast::ObjectType::Database => {
                        if !cat.database_exists(&name) {
                            if *if_exists {
                                continue;
                            }
                            bail!(UndefinedDatabase, "database \"{name}\" does not exist");
                        }
                        if name == s.database {
                            bail!(InvalidParameterValue, "cannot drop the currently open database");
                        }
                        drop_database_objects(s, &name)?;
                    }
                    _ => unreachable!(),
                }
            }
            Ok(QueryResult::Command(tag.into()))
        }
        Statement::Truncate(t) => {
            for target in &t.table_names {
                let rel = relation(cat, &s.database, &target.name)?;
                let Some(top) = rel.database().ok().and_then(|db| cat.table(&db, &rel.name)) else {
                    if t.if_exists {
                        continue;
                    }
                    bail!(UndefinedTable, "relation \"{}\" does not exist", rel.display());
                };
                // A partitioned table's partitions are truncated with it. No
                // flow over any of them evaluates meanwhile.
                let tables = super::partition::with_partitions(s, &top);
                let names: Vec<(String, String)> = tables.iter().map(|t| (t.database.clone(), t.name.clone())).collect();
                engine.flows.excluding_readers(&names, || -> Result<()> {
                    for old in &tables {
                        // New id, new empty regions: sequences never go backwards
                        // for a region id, so incremental readers of the old regions
                        // fall back to a full read instead of missing rows.
                        let mut def = old.clone();
                        def.id = cat.next_table_id()?;
                        engine.open_table_regions(&def)?;
                        cat.replace_table(def)?;
                        for r in 0..old.regions.max(1) {
                            engine.storage.drop_region(region_id(old.id, r))?;
                        }
                    }
                    Ok(())
                })?;
            }
            Ok(QueryResult::Command("TRUNCATE TABLE".into()))
        }
        Statement::ShowTables { show_options, .. } => {
            // SHOW TABLES [FROM | IN db] (GreptimeDB's and MySQL's form).
            let db = match &show_options.show_in {
                Some(ast::ShowStatementIn { parent_name: Some(n), .. }) => {
                    let db = object_name(n)?.1;
                    if !cat.database_exists(&db) {
                        bail!(UndefinedDatabase, "database \"{db}\" does not exist");
                    }
                    db
                }
                _ => s.database.clone(),
            };
            let mut names: Vec<String> = cat.tables(&db).into_iter().map(|t| t.name).collect();
            names.sort();
            super::tdengine::show_tables_names(s, &db, &mut names);
            text_rows(&["Tables"], names.into_iter().map(|n| vec![n]).collect())
        }
        Statement::ShowDatabases { .. } => text_rows(&["Database"], cat.databases().into_iter().map(|d| vec![d]).collect()),
        Statement::ShowCreate { obj_name, .. } => {
            let def = s.planner(Params::default()).table_named(obj_name)?;
            let name = def.name.clone();
            text_rows(&["Table", "Create Table"], vec![vec![name, show_create(&def)]])
        }
        Statement::ExplainTable { table_name, .. } => {
            let def = s.planner(Params::default()).table_named(table_name)?;
            let rows = def
                .columns
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    let key = if def.primary_key.contains(&i) {
                        "PRI"
                    } else if def.time_index == Some(i) {
                        "TIME INDEX"
                    } else {
                        ""
                    };
                    let sem = if def.time_index == Some(i) {
                        "TIMESTAMP"
                    } else if def.primary_key.contains(&i) {
                        "TAG"
                    } else {
                        "FIELD"
                    };
                    vec![
                        c.name.clone(),
                        c.type_name(),
                        key.to_string(),
                        if c.nullable { "YES" } else { "NO" }.to_string(),
                        c.default.clone().unwrap_or_default(),
                        sem.to_string(),
                    ]
                })
                .collect();
            text_rows(&["Column", "Type", "Key", "Null", "Default", "Semantic Type"], rows)
        }
        Statement::CreateView(cv) => {
            if cv.materialized {
                bail!(FeatureNotSupported, "materialized views are flows in weir: use CREATE FLOW");
            }
            let rel = relation(cat, &s.database, &cv.name)?;
            let database = rel.database()?;
            let name = rel.name;
            // Plan once to validate and learn the column names. A view's
            // unqualified names are its own database's (`CREATE VIEW db.v`).
            let mut planner = s.planner(Default::default());
            planner.home = Some(planner.database.clone());
            planner.database = database.clone();
            // A view's relations are checked as its owner when it is read.
            planner.check_as.replace(None);
            let plan = planner.plan_query(&cv.query, None)?;
            let mut columns: Vec<String> = plan.columns().iter().map(|c| c.name.clone()).collect();
            for (c, vc) in columns.iter_mut().zip(&cv.columns) {
                *c = ident(&vc.name);
            }
            // OR REPLACE keeps the old columns (names, types, order) and may add
            // some at the end, as PostgreSQL requires.
            if let Some(old) = cv.or_replace.then(|| cat.view(&database, &name)).flatten() {
                let old_types: Option<Vec<SqlType>> = crate::parser::parse_query(&old.sql)
                    .and_then(|q| planner.plan_query(&q, None))
                    .ok()
                    .map(|p| p.columns().iter().map(|c| c.ty).collect());
                if columns.len() < old.columns.len() {
                    bail!(InvalidTableDefinition, "cannot drop columns from view");
                }
                for (i, (was, now)) in old.columns.iter().zip(&columns).enumerate() {
                    if was != now {
                        return Err(err!(InvalidTableDefinition, "cannot change name of view column \"{was}\" to \"{now}\"")
                            .with_hint("Use ALTER VIEW ... RENAME COLUMN ... to change name of view column instead."));
                    }
                    let now_ty = plan.columns()[i].ty;
                    if let Some(was_ty) = old_types.as_ref().and_then(|t| t.get(i)) {
                        if *was_ty != now_ty {
                            bail!(InvalidTableDefinition, "cannot change data type of view column \"{was}\" from {was_ty} to {now_ty}");
                        }
                    }
                }
            }
            // The definition's text as pg_get_viewdef shows it; a query shape the
            // deparser does not know keeps the SQL text instead.
            let definition = planner.view_text(&cv.query, &columns).ok().map(|t| (t.pretty, t.plain));
            drop(planner);
            let (security_invoker, options) = view_options(&cv.options)?;
            let sql = cv.query.to_string();
            cat.create_view(ViewDef { database, name, sql, columns, id: 0, security_invoker, definition, options }, cv.or_replace)?;
            Ok(QueryResult::Command("CREATE VIEW".into()))
        }
        Statement::CreateIndex(ci) => {
            let def = s.planner(Params::default()).table_named(&ci.table_name)?;
            if def.database != s.database {
                bail!(FeatureNotSupported, "CREATE INDEX on another database's table is not supported");
            }
            let table = def.name.clone();
            let mut columns = Vec::new();
            for c in &ci.columns {
                let n = match &c.column.expr {
                    ast::Expr::Identifier(i) => ident(i),
                    other => other.to_string(),
                };
                if def.column_index(&n).is_none() {
                    bail!(UndefinedColumn, "column \"{n}\" does not exist");
                }
                columns.push(n);
            }
            let name = match &ci.name {
                Some(n) => object_name(n)?.1,
                None => format!("{table}_{}_idx", columns.join("_")),
            };
            if ci.if_not_exists && cat.indexes(&s.database, &table).iter().any(|i| i.name == name) {
                return Ok(QueryResult::Command("CREATE INDEX".into()));
            }
            cat.create_index(IndexDef { database: s.database.clone(), name, table, columns, unique: ci.unique, id: 0 })?;
            Ok(QueryResult::Command("CREATE INDEX".into()))
        }
        Statement::Explain { statement, verbose, options, .. } => {
            if let Statement::Query(q) = statement.as_ref() {
                // EXPLAIN: the physical tree. VERBOSE (or PostgreSQL's
                // `EXPLAIN (VERBOSE)`): also the logical plan before and
                // after the rewrite passes.
                let off = |a: &Option<ast::Expr>| {
                    matches!(a, Some(ast::Expr::Value(v)) if matches!(&v.value, ast::Value::Boolean(false)))
                        || matches!(a, Some(ast::Expr::Identifier(i)) if i.value.eq_ignore_ascii_case("off") || i.value.eq_ignore_ascii_case("false"))
                };
                let verbose = &(*verbose || options.iter().flatten().any(|o| o.name.value.eq_ignore_ascii_case("verbose") && !off(&o.arg)));
                let planner = s.planner(Default::default());
                let logical = planner.plan_query(q, None)?;
                let mut lines = Vec::new();
                if *verbose {
                    lines.push("Logical plan:".to_string());
                    lines.extend(logical.explain().into_iter().map(|l| format!("  {l}")));
                    let optimized = crate::planner::rewrite::optimize(logical.clone(), &planner.ctx);
                    lines.push("Logical plan after rewrites:".to_string());
                    lines.extend(optimized.explain().into_iter().map(|l| format!("  {l}")));
                    lines.push("Physical plan:".to_string());
                    let plan = crate::planner::physical::physical_plan(&optimized, &planner.ctx)?;
                    lines.extend(plan.explain().into_iter().map(|l| format!("  {l}")));
                } else {
                    lines = planner.physical(logical)?.explain();
                }
                return text_rows(&["QUERY PLAN"], lines.into_iter().map(|l| vec![l]).collect());
            }
            bail!(FeatureNotSupported, "EXPLAIN supports queries only")
        }
        Statement::AlterTable(at) => super::alter_table::execute(s, at),
        Statement::AlterView(av) => super::alter_table::alter_view(s, av),
        Statement::Comment { object_type, object_name, comment, .. } => super::comment::comment(s, object_type, object_name, comment),
        Statement::CreateFunction(cf) => super::function::create(s, cf),
        Statement::DropFunction(d) => super::function::drop(s, d),
        Statement::CreateAggregate(ca) => super::aggregate::create(s, ca),
        Statement::CreatePolicy(cp) => super::policy::create(s, cp),
        Statement::AlterPolicy(ap) => super::policy::alter(s, ap),
        Statement::DropPolicy(dp) => super::policy::drop(s, dp),
        Statement::CreateTrigger(ct) => super::trigger::create_trigger(s, ct),
        Statement::DropTrigger(dt) => super::trigger::drop_trigger(s, dt),
        Statement::Analyze { .. } | Statement::Discard { .. } | Statement::Deallocate { .. } => {
            Ok(QueryResult::Command(statement_tag(stmt)))
        }
        other => {
            let text = other.to_string();
            let word = text.split_whitespace().take(2).collect::<Vec<_>>().join(" ");
            bail!(FeatureNotSupported, "{word} is not supported")
        }
    }
}

/// PostgreSQL's VACUUM: weir's storage compacts on its own, so there is nothing to do
/// beyond PostgreSQL's answers (every named table must exist; views are skipped).
pub fn vacuum(s: &mut Session, v: &crate::parser::Vacuum) -> Result<QueryResult> {
    let cat = &s.engine.catalog;
    for t in &v.tables {
        let rel = relation(cat, &s.database, &t.name)?;
        let exists = rel.database().ok().is_some_and(|db| cat.table(&db, &rel.name).is_some() || cat.view(&db, &rel.name).is_some());
        if !exists {
            bail!(UndefinedTable, "relation \"{}\" does not exist", rel.display());
        }
    }
    Ok(QueryResult::Command("VACUUM".into()))
}

/// DROP DATABASE / DROP SCHEMA: the database's catalog entries and its
/// tables' regions (refused while TDengine streams use it).
pub(super) fn drop_database_objects(s: &Session, name: &str) -> Result<()> {
    super::tdengine::check_drop_database(s, name)?;
    for def in s.engine.catalog.drop_database(name)? {
        for r in 0..def.regions.max(1) {
            s.engine.storage.drop_region(region_id(def.id, r))?;
        }
    }
    super::tdengine::forget_database(s, name)
}

fn statement_tag(stmt: &Statement) -> String {
    match stmt {
        Statement::Analyze { .. } => "ANALYZE".into(),
        Statement::Discard { .. } => "DISCARD ALL".into(),
        _ => "DEALLOCATE".into(),
    }
}

/// Milliseconds of a TTL string; 'instant' is 0, 'forever' is none.
fn parse_ttl(s: &str) -> Result<Option<i64>> {
    let l = s.trim().to_lowercase();
    if l == "instant" {
        return Ok(Some(0));
    }
    if l == "forever" || l.is_empty() {
        return Ok(None);
    }
    let us = parse_interval(&l)
        .ok_or_else(|| err!(InvalidParameterValue, "invalid ttl \"{s}\"").with_hint("use a duration such as '7d', '1h' or 'instant'"))?;
    Ok(Some(us / 1000))
}

/// CREATE TABLE forms sqlparser parsed (weir's parser takes the usual
/// `CREATE TABLE name (...)`): CREATE TEMP TABLE and the refused ones.
fn create_sql_table(s: &mut Session, ct: &ast::CreateTable) -> Result<QueryResult> {
    if let Some(query) = &ct.query {
        let names: Vec<String> = ct.columns.iter().map(|c| ident(&c.name)).collect();
        return create_table_as(s, &ct.name, ct.if_not_exists, &names, query);
    }
    let columns = match &ct.like {
        Some(ast::CreateTableLikeKind::Parenthesized(like)) if ct.clone.is_none() => {
            let mut columns = like_columns(s, like)?;
            columns.extend(ct.columns.iter().cloned());
            columns
        }
        None if ct.clone.is_none() => ct.columns.clone(),
        _ => bail!(FeatureNotSupported, "CREATE TABLE LIKE is not supported"),
    };
    if ct.partition_of.is_some() {
        return super::partition::create_partition_of(s, ct);
    }
    let options = match &ct.table_options {
        ast::CreateTableOptions::With(v) => v.clone(),
        ast::CreateTableOptions::None => vec![],
        _ => bail!(FeatureNotSupported, "these table options are not supported"),
    };
    create_weir_table(
        s,
        &CreateTable {
            if_not_exists: ct.if_not_exists,
            name: ct.name.clone(),
            columns,
            constraints: ct.constraints.clone(),
            time_index: vec![],
            indexes: vec![],
            partition: None,
            partition_by: ct.partition_by.as_deref().cloned(),
            partition_opclasses: vec![],
            engine: None,
            options,
            inherits: ct.inherits.clone().unwrap_or_default(),
        },
    )
}

/// `CREATE TABLE t (LIKE source [INCLUDING | EXCLUDING DEFAULTS])`: the
/// source table's column names, types and NOT NULL, and its defaults only
/// when INCLUDING DEFAULTS says so (PostgreSQL's rules; its other INCLUDING
/// options are not in sqlparser's grammar).
fn like_columns(s: &Session, like: &ast::CreateTableLike) -> Result<Vec<ast::ColumnDef>> {
    let source = s.planner(Params::default()).table_named(&like.name)?;
    let defaults = matches!(like.defaults, Some(ast::CreateTableLikeDefaults::Including));
    let mut columns = Vec::with_capacity(source.columns.len());
    for c in &source.columns {
        let mut options = Vec::new();
        if !c.nullable {
            options.push(ast::ColumnOptionDef { name: None, option: ast::ColumnOption::NotNull });
        }
        if let Some(d) = c.default.as_deref().filter(|_| defaults) {
            options.push(ast::ColumnOptionDef { name: None, option: ast::ColumnOption::Default(crate::parser::parse_expr(d)?) });
        }
        columns.push(ast::ColumnDef {
            name: ast::Ident::with_quote('"', c.name.clone()),
            data_type: crate::parser::parse_data_type(&c.type_name())?,
            options,
        });
    }
    Ok(columns)
}

/// PARTITION BY: the new table (an ordinary one whose regions stay empty)
/// records its key.
fn record_partition_key(s: &mut Session, ct: &CreateTable, key: Option<crate::catalog::partition::PartitionKey>) -> Result<()> {
    let Some(key) = key else { return Ok(()) };
    {
        let planner = s.planner(Params::default());
        let mut def = planner.table_named(&ct.name)?;
        def.partition.key = Some(key);
        let checked = super::partition::check_key(&planner, &def);
        drop(planner);
        match checked {
            Ok(()) => {
                s.engine.catalog.replace_table(def)?;
            }
            Err(e) => {
                super::partition::drop_tree(s, &def)?;
                return Err(e);
            }
        }
    }
    Ok(())
}

/// `CREATE TABLE name [(columns)] AS query` and `SELECT ... INTO name`: a plain table
/// with the query's column names and types, filled by `INSERT INTO name query`.
/// PostgreSQL's command tag is `SELECT n`.
pub fn create_table_as(
    s: &mut Session,
    name: &ast::ObjectName,
    if_not_exists: bool,
    names: &[String],
    query: &ast::Query,
) -> Result<QueryResult> {
    let columns = {
        let planner = s.planner(Params::default());
        let plan = planner.plan_query(query, None)?;
        crate::planner::output_columns(&plan)
    };
    if names.len() > columns.len() {
        bail!(Syntax, "too many column names were specified");
    }
    {
        let cat = &s.engine.catalog;
        let rel = relation(cat, &s.database, name)?;
        let db = rel.database()?;
        if cat.table(&db, &rel.name).is_some() || cat.view(&db, &rel.name).is_some() {
            if if_not_exists {
                return Ok(QueryResult::Command("CREATE TABLE AS".into()));
            }
            bail!(DuplicateTable, "relation \"{}\" already exists", rel.name);
        }
    }
    // The definition is written as DDL and parsed back, so the column types go
    // through the same path as a CREATE TABLE the user typed.
    let quote = |n: &str| format!("\"{}\"", n.replace('"', "\"\""));
    let defs: Vec<String> =
        columns.iter().enumerate().map(|(i, c)| format!("{} {}", quote(names.get(i).unwrap_or(&c.name)), c.ty.pg_name())).collect();
    if defs.is_empty() {
        bail!(FeatureNotSupported, "a table needs at least one column");
    }
    let ddl = format!("CREATE TABLE {name} ({})", defs.join(", "));
    let insert = format!("INSERT INTO {name} SELECT 1");
    let mut stmts = crate::parser::parse(&ddl)?;
    stmts.extend(crate::parser::parse(&insert)?);
    let mut insert = match stmts.pop() {
        Some(crate::parser::Statement::Sql(Statement::Insert(i))) => i,
        _ => bail!(Internal, "CREATE TABLE AS: no INSERT"),
    };
    insert.source = Some(Box::new(query.clone()));
    let Some(create) = stmts.pop() else { bail!(Internal, "CREATE TABLE AS: no CREATE TABLE") };
    s.execute_statement(&create, Params::default())?;
    let n = match s.execute_statement(&crate::parser::Statement::Sql(Statement::Insert(insert)), Params::default()) {
        Ok(QueryResult::Command(tag)) => tag.rsplit(' ').next().and_then(|n| n.parse::<u64>().ok()).unwrap_or(0),
        Ok(_) => 0,
        Err(e) => {
            // All or nothing: the new table goes with the failed fill.
            if let Ok(drop) = crate::parser::parse(&format!("DROP TABLE {name}")) {
                for d in drop {
                    let _ = s.execute_statement(&d, Params::default());
                }
            }
            return Err(e);
        }
    };
    Ok(QueryResult::Command(format!("SELECT {n}")))
}

/// `SELECT ... INTO [TEMP] [TABLE] name FROM ...`: the target and the query without INTO.
pub fn select_into(q: &ast::Query) -> Option<Result<(ast::ObjectName, ast::Query)>> {
    let ast::SetExpr::Select(sel) = q.body.as_ref() else { return None };
    let into = sel.into.as_ref()?;
    let name = match into.targets.as_slice() {
        [ast::Expr::Identifier(i)] => ast::ObjectName::from(vec![i.clone()]),
        [ast::Expr::CompoundIdentifier(v)] => ast::ObjectName::from(v.clone()),
        _ => return Some(Err(err!(FeatureNotSupported, "SELECT INTO needs one table name"))),
    };
    let mut query = q.clone();
    if let ast::SetExpr::Select(sel) = query.body.as_mut() {
        sel.into = None;
    }
    Some(Ok((name, query)))
}

/// An option's key: `ttl`, `compaction.type` or `'compaction.type'`.
fn option_key(key: &ast::ObjectName) -> String {
    key.0
        .iter()
        .map(|p| match p.as_ident() {
            Some(i) if i.quote_style.is_some() => i.value.to_lowercase(),
            Some(i) => i.value.to_lowercase(),
            None => p.to_string().to_lowercase(),
        })
        .collect::<Vec<_>>()
        .join(".")
}

/// An option's value as text: `'7d'`, `7`, `true`, `twcs`.
fn option_value(value: &ast::Expr) -> String {
    match value {
        ast::Expr::Value(v) => match &v.value {
            ast::Value::SingleQuotedString(s) => s.clone(),
            other => other.to_string(),
        },
        ast::Expr::Identifier(i) => i.value.clone(),
        other => other.to_string(),
    }
}

/// A view's `WITH (…)` options as PostgreSQL checks them; returns `security_invoker`
/// (the view's relations are then checked as the user who reads it, not its
/// owner) and the options as `pg_class.reloptions` lists them (a bare name is
/// `name=true`). `security_barrier` is accepted with nothing to do: weir has no
/// user-defined functions a pushed-down predicate could leak rows through.
/// `check_option` is accepted: weir's views are never written through.
fn view_options(options: &ast::CreateTableOptions) -> Result<(bool, Vec<String>)> {
    let options = match options {
        ast::CreateTableOptions::With(v) => v.as_slice(),
        ast::CreateTableOptions::None => &[],
        _ => bail!(FeatureNotSupported, "these view options are not supported"),
    };
    let mut security_invoker = false;
    let mut listed = Vec::with_capacity(options.len());
    for o in options {
        let (key, value) = match o {
            ast::SqlOption::Ident(k) => (option_key(k), None),
            ast::SqlOption::KeyValue { key, value } => (option_key(key), Some(option_value(value))),
            other => bail!(FeatureNotSupported, "view option {other} is not supported"),
        };
        listed.push(format!("{key}={}", value.as_deref().unwrap_or("true")));
        match key.as_str() {
            "security_barrier" | "security_invoker" => {
                let on = match value.as_deref().map(|v| v.to_ascii_lowercase()) {
                    None => true,
                    Some(v) if matches!(v.as_str(), "true" | "on" | "yes" | "1" | "t" | "y") => true,
                    Some(v) if matches!(v.as_str(), "false" | "off" | "no" | "0" | "f" | "n") => false,
                    Some(_) => bail!(InvalidParameterValue, "invalid value for boolean option \"{key}\": {}", value.unwrap_or_default()),
                };
                if key == "security_invoker" {
                    security_invoker = on;
                }
            }
            "check_option" => match value.as_deref().map(|v| v.to_ascii_lowercase()).as_deref() {
                Some("local" | "cascaded") => {}
                _ => {
                    return Err(err!(
                        InvalidParameterValue,
                        "invalid value for enum option \"check_option\": {}",
                        value.unwrap_or_default()
                    )
                    .with_detail("Valid values are \"local\" and \"cascaded\"."))
                }
            },
            other => bail!(InvalidParameterValue, "unrecognized parameter \"{other}\""),
        }
    }
    Ok((security_invoker, listed))
}

/// GreptimeDB's storage-tuning options: accepted, with no effect on weir's
/// storage (each is listed in README.md). Options that change what a query
/// answers are honoured or refused, never ignored.
fn greptime_tuning_option(key: &str, value: &str) -> Result<bool> {
    let v = value.to_lowercase();
    Ok(match key {
        "merge_mode" => match v.as_str() {
            // weir's identity semantics: the last write of a row wins.
            "last_row" => true,
            _ => bail!(FeatureNotSupported, "merge_mode '{value}' is not supported; weir keeps the last row (merge_mode 'last_row')"),
        },
        "compaction.type" => match v.as_str() {
            "twcs" => true,
            _ => bail!(FeatureNotSupported, "compaction.type '{value}' is not supported; weir compacts by time window ('twcs')"),
        },
        // weir always writes its WAL; skip_wal = 'true' is more durable than asked.
        "skip_wal" | "sst_format" | "storage" => true,
        k if k.starts_with("compaction.twcs.") || k.starts_with("memtable.") || k.starts_with("index.") => true,
        _ => false,
    })
}

pub fn create_weir_table(s: &mut Session, ct: &CreateTable) -> Result<QueryResult> {
    let engine = s.engine.clone();
    let cat = &engine.catalog;
    let rel: Relation = relation(cat, &s.database, &ct.name)?;
    let database = rel.database()?;
    let name = rel.name.clone();
    if let Some(e) = &ct.engine {
        if !e.value.eq_ignore_ascii_case("mito") {
            return Err(err!(FeatureNotSupported, "table engine \"{}\" is not supported", e.value).with_hint("weir's engine is mito"));
        }
    }
    if ct.partition.is_some() {
        return Err(err!(FeatureNotSupported, "PARTITION ON COLUMNS is not supported")
            .with_hint("WITH (regions = n) splits a table by its primary key"));
    }
    let key = ct.partition_by.as_ref().map(|k| super::partition::parse_key(k, &ct.partition_opclasses)).transpose()?;
    if ct.time_index.len() > 1 {
        bail!(InvalidTableDefinition, "multiple TIME INDEX columns for table \"{name}\" are not allowed");
    }
    if cat.table(&database, &name).is_some() || cat.view(&database, &name).is_some() || cat.sequence(&database, &name).is_some() {
        if ct.if_not_exists {
            return Ok(QueryResult::Command("CREATE TABLE".into()));
        }
        bail!(DuplicateTable, "relation \"{name}\" already exists");
    }
    let time_index_col: Option<String> = ct.time_index.first().map(|t| ident(&t.column));
    let mut columns: Vec<ColumnDef> = Vec::new();
    let mut primary_key: Vec<String> = Vec::new();
    let mut serials = Vec::new();
    for c in &ct.columns {
        let (col, pk) = sql_column(s, c)?;
        serials.extend(super::sequence::column_sequence(c)?);
        if columns.iter().any(|x| x.name == col.name) {
            bail!(DuplicateColumn, "column \"{}\" specified more than once", col.name);
        }
        if pk {
            primary_key.push(col.name.clone());
        }
        columns.push(col);
    }
    let parents = super::inherit::parents(s, &database, &ct.inherits)?;
    if !parents.is_empty() {
        columns = super::inherit::merge_columns(&parents, columns)?;
    }
    let checks = super::check::from_create(&name, &ct.columns, &ct.constraints, super::inherit::inherited_checks(&parents));
    // A table without columns is PostgreSQL's too (`CREATE TABLE t ()`): its
    // rows are only counted.
    if columns.is_empty() && (ct.time_index.len() + ct.indexes.len() > 0 || ct.partition_by.is_some()) {
        bail!(Syntax, "a table needs at least one column");
    }
    let sequences = super::sequence::plan_column_sequences(s, &database, &name, &mut columns, serials)?;
    for i in &ct.indexes {
        for c in &i.columns {
            let n = ident(c);
            if !columns.iter().any(|x| x.name == n) {
                bail!(UndefinedColumn, "column \"{n}\" named in {} INDEX does not exist", i.kind);
            }
        }
    }
    let mut unique_sets: Vec<Vec<String>> = Vec::new();
    for tc in &ct.constraints {
        match tc {
            ast::TableConstraint::PrimaryKey(pk) => {
                for c in &pk.columns {
                    primary_key.push(match &c.column.expr {
                        ast::Expr::Identifier(i) => ident(i),
                        other => other.to_string(),
                    });
                }
            }
            // Collected by `check::from_create`.
            ast::TableConstraint::Check(_) => {}
            ast::TableConstraint::Unique(u) => {
                unique_sets.push(u.columns.iter().map(|c| c.column.expr.to_string().to_lowercase()).collect())
            }
            _ => {}
        }
    }
    let time_index = match &time_index_col {
        Some(ti) => {
            let i = columns
                .iter()
                .position(|c| &c.name == ti)
                .ok_or_else(|| err!(UndefinedColumn, "column \"{ti}\" named in TIME INDEX does not exist"))?;
            if !columns[i].ty.is_timestamp() {
                bail!(DatatypeMismatch, "TIME INDEX column \"{ti}\" must be a timestamp, not {}", columns[i].ty);
            }
            columns[i].nullable = false;
            Some(i)
        }
        None => None,
    };
    let mut pk_idx = Vec::new();
    for p in &primary_key {
        let i =
            columns.iter().position(|c| &c.name == p).ok_or_else(|| err!(UndefinedColumn, "column \"{p}\" named in key does not exist"))?;
        // With a time index, the time column is part of the identity already.
        if Some(i) != time_index && !pk_idx.contains(&i) {
            pk_idx.push(i);
        }
    }
    // Options.
    let mut ttl_ms = None;
    let mut ttl_text = None;
    let mut append_mode = false;
    let mut regions = 1u32;
    for o in &ct.options {
        let ast::SqlOption::KeyValue { key, value } = o else { bail!(FeatureNotSupported, "unsupported table option {o}") };
        let k = option_key(key);
        let v = option_value(value);
        match k.as_str() {
            "ttl" => {
                ttl_ms = parse_ttl(&v)?;
                ttl_text = Some(v);
            }
            "append_mode" => append_mode = matches!(v.to_lowercase().as_str(), "true" | "on" | "1"),
            "regions" => {
                regions = v.parse().map_err(|_| err!(InvalidParameterValue, "regions must be a positive integer, not \"{v}\""))?;
                if regions == 0 || regions > 256 {
                    bail!(InvalidParameterValue, "regions must be between 1 and 256");
                }
            }
            other if greptime_tuning_option(other, &v)? => {}
            // PostgreSQL's heap and vacuum parameters: accepted, nothing to tune.
            other if super::alter_table::storage_parameter(other) => {}
            other => {
                return Err(err!(InvalidParameterValue, "unrecognized table option \"{other}\"")
                    .with_hint("weir knows ttl, append_mode and regions, and accepts GreptimeDB's merge_mode, skip_wal, sst_format, storage, compaction.*, memtable.* and index.*"))
            }
        }
    }
    if time_index.is_none() && (ttl_ms.is_some()) {
        bail!(InvalidParameterValue, "ttl needs a TIME INDEX column");
    }
    if regions > 1 && pk_idx.is_empty() {
        bail!(InvalidParameterValue, "regions > 1 needs a PRIMARY KEY to split rows by");
    }
    let def = TableDef {
        id: cat.next_table_id()?,
        database: database.clone(),
        name: name.clone(),
        columns,
        time_index,
        primary_key: pk_idx,
        append_mode,
        ttl_ms,
        ttl_text,
        regions,
        partition: Default::default(),
        inherits: parents.iter().map(|p| p.name.clone()).collect(),
        checks,
        triggers: Vec::new(),
        row_security: Default::default(),
    };
    super::check::validate(&s.planner(Params::default()), &def)?;
    // Regions first: a crash between the two leaves an orphan region
    // directory, never a catalog entry without storage.
    engine.open_table_regions(&def)?;
    cat.create_table(def.clone())?;
    for seq in sequences {
        let seq = cat.create_sequence(seq)?;
        // The table's creator owns its columns' sequences.
        cat.set_owner(&crate::catalog::acl::AclObject::Relation(seq.database, seq.name), &s.user)?;
    }
    for (k, u) in unique_sets.into_iter().enumerate() {
        cat.create_index(IndexDef {
            database: database.clone(),
            name: format!("{name}_unique_{k}"),
            table: name.clone(),
            columns: u,
            unique: true,
            id: 0,
        })?;
    }
    if time_index.is_none() && !primary_key.is_empty() {
        cat.create_index(IndexDef {
            database: database.clone(),
            name: format!("{name}_pkey"),
            table: name.clone(),
            columns: primary_key,
            unique: true,
            id: 0,
        })?;
    }
    record_partition_key(s, ct, key)?;
    Ok(QueryResult::Command("CREATE TABLE".into()))
}

/// One column of a CREATE TABLE (or ALTER TABLE … ADD COLUMN): its definition and
/// whether it says PRIMARY KEY.
pub(super) fn sql_column(s: &Session, c: &ast::ColumnDef) -> Result<(ColumnDef, bool)> {
    let cname = ident(&c.name);
    let ty = match super::sequence::column_type(c) {
        Some(serial) => serial,
        None => crate::planner::resolve_type(&s.engine.catalog, &s.database, &c.data_type)?,
    };
    if ty == SqlType::Unknown {
        bail!(InvalidTableDefinition, "column \"{cname}\" has pseudo-type unknown");
    }
    let mut nullable = true;
    let mut default = None;
    let mut pk = false;
    for o in &c.options {
        match &o.option {
            ast::ColumnOption::NotNull => nullable = false,
            ast::ColumnOption::Null => nullable = true,
            ast::ColumnOption::Default(e) => default = Some(e.to_string()),
            ast::ColumnOption::PrimaryKey(_) => {
                pk = true;
                nullable = false;
            }
            ast::ColumnOption::Unique(_) => {}
            // Collected by `check::from_create` (CREATE TABLE) or refused by
            // ADD COLUMN's caller.
            ast::ColumnOption::Check(_) => {}
            _ => {}
        }
    }
    // PostgreSQL keeps p fractional digits of a TIMESTAMP(p); 6 and
    // above (GreptimeDB's 9) are microseconds, PostgreSQL's maximum.
    let precision = match &c.data_type {
        ast::DataType::Timestamp(Some(p), _) | ast::DataType::Datetime(Some(p)) if *p < 6 => Some(*p as u8),
        _ => None,
    };
    let typmod = match crate::planner::numeric_typmod(&c.data_type)? {
        Some(t) => Some(t),
        None => crate::planner::char_typmod(&c.data_type)?,
    };
    let user_type = crate::planner::declared_user_type(&s.engine.catalog, &s.database, &c.data_type);
    Ok((ColumnDef { name: cname, ty, nullable, default, precision, typmod, user_type }, pk))
}

pub fn show_create(t: &TableDef) -> String {
    let mut lines: Vec<String> = t
        .columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let mut l = format!("  \"{}\" {}", c.name, c.type_name());
            if !c.nullable && t.time_index != Some(i) {
                l.push_str(" NOT NULL");
            }
            if let Some(d) = &c.default {
                l.push_str(&format!(" DEFAULT {d}"));
            }
            l
        })
        .collect();
    if let Some(ti) = t.time_index {
        lines.push(format!("  TIME INDEX (\"{}\")", t.columns[ti].name));
    }
    if !t.primary_key.is_empty() {
        lines.push(format!(
            "  PRIMARY KEY ({})",
            t.primary_key.iter().map(|&i| format!("\"{}\"", t.columns[i].name)).collect::<Vec<_>>().join(", ")
        ));
    }
    let mut opts = Vec::new();
    if let Some(ttl) = &t.ttl_text {
        opts.push(format!("ttl = '{ttl}'"));
    }
    if t.append_mode {
        opts.push("append_mode = 'true'".into());
    }
    if t.regions > 1 {
        opts.push(format!("regions = {}", t.regions));
    }
    let mut s = format!("CREATE TABLE IF NOT EXISTS \"{}\" (\n{}\n)", t.name, lines.join(",\n"));
    if !opts.is_empty() {
        s.push_str(&format!("\nWITH (\n  {}\n)", opts.join(",\n  ")));
    }
    s
}

/// GreptimeDB's `CREATE DATABASE ... WITH (options)`: weir has no
/// database-level options, and ignoring a ttl would keep data it was told
/// to drop, so the statement is refused.
pub fn create_database_with_options(_s: &mut Session, c: &crate::parser::CreateDatabase) -> Result<QueryResult> {
    let names: Vec<String> = c
        .options
        .iter()
        .map(|o| match o {
            ast::SqlOption::KeyValue { key, .. } => option_key(key),
            other => other.to_string(),
        })
        .collect();
    Err(err!(FeatureNotSupported, "database options are not supported: {}", names.join(", "))
        .with_hint("create the database without options and give each table its own, e.g. CREATE TABLE ... WITH (ttl = '7d')"))
}

/// `ADMIN name(args)`: the arguments are constant expressions, evaluated
/// now; a table argument may name another database (`'db.t'`).
pub fn admin(s: &mut Session, a: &Admin, params: Params) -> Result<QueryResult> {
    let name = a.name();
    let exprs = a.args().map_err(|m| err!(FeatureNotSupported, "{m}"))?;
    let mut args: Vec<String> = Vec::new();
    {
        let planner = s.planner(params);
        let scope = crate::planner::Scope::new(vec![], None);
        for e in exprs {
            let bound = planner.bind_expr(e, &scope, None)?;
            match planner.eval_const(&bound)? {
                crate::types::Value::Null => bail!(InvalidParameterValue, "{name} does not take NULL arguments"),
                crate::types::Value::Text(t) => args.push(t),
                other => args.push(crate::types::format_value(&other)),
            }
        }
    }
    let table = |s: &Session| -> Result<TableDef> {
        let n = args.first().ok_or_else(|| err!(InvalidParameterValue, "{name} needs a table name"))?;
        let object = crate::parser::parse_object_name(n)?;
        let t = s.planner(Params::default()).table_named(&object)?;
        super::privilege::check_admin_table(s, &t)?;
        Ok(t)
    };
    let n: i64 = match name.as_str() {
        "flush_table" => {
            let t = table(s)?;
            let mut n = 0;
            for r in 0..t.regions.max(1) {
                if let Some(reg) = s.engine.storage.region(region_id(t.id, r)) {
                    reg.flush()?;
                    n += 1;
                }
            }
            n
        }
        "compact_table" => {
            let t = table(s)?;
            let mut n = 0;
            for r in 0..t.regions.max(1) {
                if let Some(reg) = s.engine.storage.region(region_id(t.id, r)) {
                    reg.compact()?;
                    n += 1;
                }
            }
            n
        }
        "flush_flow" => {
            let n = args.first().ok_or_else(|| err!(InvalidParameterValue, "flush_flow needs a flow name"))?;
            super::flow_ddl::flush_flow(s, n)?
        }
        "flush_stream" => {
            let n = args.first().ok_or_else(|| err!(InvalidParameterValue, "flush_stream needs a stream name"))?;
            super::tdengine::flush_stream(s, n)?
        }
        other => bail!(UndefinedFunction, "admin function {other} does not exist"),
    };
    let cols = vec![PlanColumn::new(name.clone(), SqlType::Int8)];
    let b = RecordBatch::try_new(arrow_schema(&cols), vec![Arc::new(arrow::array::Int64Array::from(vec![n]))])?;
    Ok(QueryResult::Rows { columns: cols, batches: vec![b] })
}
