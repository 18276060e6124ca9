//! TDengine's statements on weir: supertables as weir tables (`tbname`
//! and the tags are the primary key, so the storage engine stays one),
//! child tables as catalog entries plus a view of their rows, INSERT into a
//! child table rewritten (on the AST) into an INSERT into its supertable,
//! snodes and dnodes, and the stream statements (the running side is
//! `flow::tdengine`).

use arrow::array::StringArray;
use sqlparser::ast;

use super::{dml, QueryResult, Session};
use crate::catalog::acl::{self, AclObject};
use crate::catalog::{ColumnDef, SnodeDef, StreamDef, SuperTableDef, TableDef};
use crate::error::Result;
use crate::flow::tdengine::{self as td, TableKind, TBNAME};
use crate::flow::tdengine_notify as td_notify;
use crate::flow::Env;
use crate::parser::{ChildSpec, CreateStable, CreateStream, StreamOption, StreamTrigger, TdStatement};
use crate::planner::{ident, Params};
use crate::types::{SqlType, Value};
use crate::{bail, err};

fn env(s: &Session) -> Env<'_> {
    Env { catalog: &s.engine.catalog, storage: &s.engine.storage }
}

fn cmd(tag: &str) -> Result<QueryResult> {
    Ok(QueryResult::Command(tag.into()))
}

/// The one dnode of this process.
const DNODE_ID: i64 = 1;

pub fn execute(s: &mut Session, t: &TdStatement) -> Result<QueryResult> {
    match t {
        TdStatement::CreateStable(c) => create_stable(s, c),
        TdStatement::CreateChildTables(v) => {
            for c in v {
                create_child(s, c)?;
            }
            cmd("CREATE TABLE")
        }
        TdStatement::DropStable { if_exists, name } => {
            let (db, n) = td::qualified(&s.database, name)?;
            if s.engine.catalog.stable(&db, &n).is_none() {
                if *if_exists {
                    return cmd("DROP STABLE");
                }
                bail!(UndefinedTable, "STable not exist: {n}");
            }
            drop_stable(s, &db, &n)?;
            cmd("DROP STABLE")
        }
        TdStatement::ShowStables { database, like } => {
            let db = database.as_ref().map(ident).unwrap_or_else(|| s.database.clone());
            let mut names: Vec<String> = s.engine.catalog.stables(&db).into_iter().map(|x| x.name).collect();
            names.retain(|n| like_match(like.as_deref(), n));
            names.sort();
            text_rows(&["stable_name"], names.into_iter().map(|n| vec![n]).collect())
        }
        TdStatement::InsertUsing(parts) => {
            let mut n = 0u64;
            for p in parts {
                if let Some(u) = &p.using {
                    create_child(s, &ChildSpec { if_not_exists: true, ..u.clone() })?;
                }
                let ins = insert_statement(s, &p.table, &p.columns, &p.rows)?;
                if let QueryResult::Command(tag) = run_insert(s, &ins)? {
                    n += tag.rsplit(' ').next().and_then(|x| x.parse::<u64>().ok()).unwrap_or(0);
                }
            }
            cmd(&format!("INSERT 0 {n}"))
        }
        TdStatement::CreateSnode { dnode } => {
            check_root(s)?;
            if *dnode != DNODE_ID {
                bail!(UndefinedObject, "Dnode does not exist: {dnode}");
            }
            if s.engine.catalog.snodes().iter().any(|x| x.id == *dnode) {
                bail!(DuplicateObject, "Snode already exists on dnode {dnode}");
            }
            s.engine.catalog.put_snode(&SnodeDef { id: *dnode, created_ms: crate::flow::batching::now_ms() })?;
            cmd("CREATE SNODE")
        }
        TdStatement::DropSnode { dnode } => {
            check_root(s)?;
            let cat = &s.engine.catalog;
            if !cat.snodes().iter().any(|x| x.id == *dnode) {
                bail!(UndefinedObject, "Snode does not exist on dnode {dnode}");
            }
            let others = cat.snodes().into_iter().filter(|x| x.id != *dnode).count();
            let on_it = cat.streams().into_iter().filter(|x| x.snode == *dnode).count();
            if others == 0 && on_it > 0 {
                return Err(err!(ObjectInUse, "Snode still in use with streams")
                    .with_detail(format!("{on_it} stream(s) run on snode {dnode}, the last snode"))
                    .with_hint("drop the streams first"));
            }
            cat.drop_snode(*dnode)?;
            cmd("DROP SNODE")
        }
        TdStatement::ShowSnodes => system_query(s, "ins_snodes"),
        TdStatement::ShowDnodes => system_query(s, "ins_dnodes"),
        TdStatement::CreateStream(c) => create_stream(s, c),
        TdStatement::DropStream { if_exists, names } => {
            let engine = s.engine.clone();
            let _g = engine.streams.exclusive();
            for n in names {
                let (db, name) = td::qualified(&s.database, n)?;
                if s.engine.catalog.stream(&db, &name).is_none() {
                    if *if_exists {
                        continue;
                    }
                    bail!(UndefinedObject, "Stream not exist: {db}.{name}");
                }
                need_stream_write(s, &db, "DROP STREAM")?;
                if let Some(def) = s.engine.catalog.stream(&db, &name) {
                    td::release(&env(s), &def);
                }
                s.engine.catalog.drop_stream(&db, &name)?;
            }
            cmd("DROP STREAM")
        }
        TdStatement::ShowStreams { database, like } => {
            let db = database.as_ref().map(ident).unwrap_or_else(|| s.database.clone());
            let mut v: Vec<StreamDef> = s.engine.catalog.streams().into_iter().filter(|x| x.database == db).collect();
            v.retain(|x| like_match(like.as_deref(), &x.name));
            v.sort_by(|a, b| a.name.cmp(&b.name));
            let rows = v.iter().map(|x| vec![x.name.clone(), status(s, x)]).collect();
            text_rows(&["stream_name", "status"], rows)
        }
        TdStatement::ShowCreateStream { name } => {
            let def = stream_def(s, name)?;
            text_rows(&["stream_name", "create_sql"], vec![vec![def.name.clone(), def.sql.clone()]])
        }
        TdStatement::StopStream { if_exists, name } | TdStatement::StartStream { if_exists, name, .. } => {
            let engine = s.engine.clone();
            let _g = engine.streams.exclusive();
            let (db, n) = td::qualified(&s.database, name)?;
            let Some(mut def) = s.engine.catalog.stream(&db, &n) else {
                if *if_exists {
                    return cmd("OK");
                }
                bail!(UndefinedObject, "Stream not exist: {db}.{n}");
            };
            let stop = matches!(t, TdStatement::StopStream { .. });
            need_stream_write(s, &db, if stop { "STOP STREAM" } else { "START STREAM" })?;
            def.status = if stop { "Stopped" } else { "Running" }.into();
            s.engine.catalog.put_stream(&def)?;
            if let TdStatement::StartStream { ignore_untreated: true, .. } = t {
                // Data written while stopped is not processed: record the
                // windows as they are now without computing them.
                td::run(&env(s), &s.engine.notify, &def, td::Mode::Skip, None)?;
            }
            cmd(if stop { "STOP STREAM" } else { "START STREAM" })
        }
        TdStatement::DropDatabaseForce { if_exists, name } => {
            let db = ident(name);
            if !s.engine.catalog.database_exists(&db) {
                if *if_exists {
                    return cmd("DROP DATABASE");
                }
                bail!(UndefinedDatabase, "database \"{db}\" does not exist");
            }
            if db == s.database {
                bail!(InvalidParameterValue, "cannot drop the currently open database");
            }
            if !s.engine.catalog.is_owner(&s.user, &AclObject::Database(db.clone())) {
                bail!(InsufficientPrivilege, "must be owner of database {db}");
            }
            // The streams that use it go first (each needs write on its
            // own database, as DROP STREAM), then the database as usual.
            let engine = s.engine.clone();
            {
                let _g = engine.streams.exclusive();
                for def in streams_using(s, &db) {
                    need_stream_write(s, &def.database, "DROP DATABASE FORCE")?;
                }
                for def in streams_using(s, &db) {
                    td::release(&env(s), &def);
                    engine.catalog.drop_stream(&def.database, &def.name)?;
                }
            }
            let stmt = match crate::parser::parse(&format!("DROP DATABASE {}", quote(&db)))?.pop() {
                Some(crate::parser::Statement::Sql(stmt)) => stmt,
                _ => bail!(Internal, "DROP DATABASE did not parse"),
            };
            s.execute_sql_statement(&stmt, Params::default())
        }
        TdStatement::Recalculate { name, from, to } => {
            let def = stream_def(s, name)?;
            need_stream_write(s, &def.database, "RECALCULATE STREAM")?;
            let cs = td::parse_def(&def)?;
            if matches!(cs.trigger, StreamTrigger::Period { .. }) {
                bail!(FeatureNotSupported, "Stream recalculation is not supported for PERIOD trigger");
            }
            let planner = s.planner(Params::default());
            let from = td::time_value(&planner, from)?;
            let to = to.as_ref().map(|t| td::time_value(&planner, t)).transpose()?;
            drop(planner);
            if matches!(cs.trigger, StreamTrigger::Count { .. }) && to.is_none() {
                // TDengine ignores a COUNT_WINDOW recalculation without an end.
                return cmd("RECALCULATE STREAM");
            }
            let engine = s.engine.clone();
            let _g = engine.streams.exclusive();
            let cat = &engine.catalog;
            let mut st = cat.stream_state(&def.database, &def.name);
            let id = cat.next_td_id()?;
            st.recalcs.push(crate::catalog::RecalcRequest {
                id,
                start_us: from,
                end_us: to,
                status: "Pending".into(),
                request_ms: crate::flow::batching::now_ms(),
                message: String::new(),
            });
            // TDengine keeps at most 100 records per stream.
            let excess = st.recalcs.len().saturating_sub(100);
            st.recalcs.drain(..excess);
            cat.put_stream_state(&def.database, &def.name, &st)?;
            cmd("RECALCULATE STREAM")
        }
    }
}

fn quote(s: &str) -> String {
    format!("\"{}\"", s.replace('"', "\"\""))
}

/// The streams that use database `db`: living in it, triggering on a
/// table of it, reading one or writing their output into it.
fn streams_using(s: &Session, db: &str) -> Vec<StreamDef> {
    let uses = |def: &StreamDef| -> bool {
        if def.database == db {
            return true;
        }
        let Ok(cs) = td::parse_def(def) else { return false };
        let in_db = |n: &ast::ObjectName| td::qualified(&def.database, n).is_ok_and(|(d, _)| d == db);
        if cs.from.as_ref().is_some_and(in_db) || cs.into.as_ref().is_some_and(in_db) {
            return true;
        }
        let mut reads = false;
        if let Some(q) = &cs.query {
            let _ = ast::visit_relations(q.as_ref(), |n| {
                reads |= in_db(n);
                std::ops::ControlFlow::<()>::Continue(())
            });
        }
        reads
    };
    s.engine.catalog.streams().into_iter().filter(|d| uses(d)).collect()
}

/// DROP DATABASE without FORCE: refused while streams use the database
/// (TDengine's words).
pub fn check_drop_database(s: &Session, db: &str) -> Result<()> {
    let using = streams_using(s, db);
    if using.is_empty() {
        return Ok(());
    }
    let names: Vec<String> = using.iter().map(|d| format!("{}.{}", d.database, d.name)).collect();
    Err(err!(ObjectInUse, "Stream must be dropped first")
        .with_detail(format!("database \"{db}\" is used by stream(s) {}", names.join(", ")))
        .with_hint(format!("drop the streams, or DROP DATABASE {db} FORCE to drop them too")))
}

/// After DROP DATABASE: forget its supertables and child tables (their
/// tables and views went with it).
pub fn forget_database(s: &Session, db: &str) -> Result<()> {
    let cat = &s.engine.catalog;
    for c in cat.child_tables(db) {
        cat.drop_child_table(db, &c.name)?;
    }
    for st in cat.stables(db) {
        cat.drop_stable(db, &st.name)?;
    }
    Ok(())
}

fn text_rows(names: &[&str], rows: Vec<Vec<String>>) -> Result<QueryResult> {
    super::ddl::text_rows(names, rows)
}

fn like_match(p: Option<&str>, name: &str) -> bool {
    let Some(p) = p else { return true };
    use arrow::array::Array;
    arrow::compute::kernels::comparison::like(&StringArray::from(vec![name]), &arrow::array::Scalar::new(StringArray::from(vec![p])))
        .map(|m| m.is_valid(0) && m.value(0))
        .unwrap_or(false)
}

/// TDengine's per-database stream privileges on weir's ACLs:
/// "write" on a database is CREATE on it, "read" of a table is SELECT on
/// it (CONNECT on its database included). 42501 with TDengine's words.
fn need(s: &Session, obj: AclObject, mask: u32, what: &str) -> Result<()> {
    if s.engine.catalog.has_privilege(&s.user, &obj, mask) {
        return Ok(());
    }
    let on = match &obj {
        AclObject::Database(d) => format!("database {d}"),
        AclObject::Relation(d, n) => format!("table {d}.{n}"),
        AclObject::Flow(n) => format!("flow {n}"),
    };
    Err(err!(InsufficientPrivilege, "Insufficient privilege for operation")
        .with_detail(format!("{what} needs {} on {on}", acl::privilege_name(mask))))
}

/// Stopping, starting, dropping and recalculating a stream: write on its
/// database.
fn need_stream_write(s: &Session, db: &str, what: &str) -> Result<()> {
    need(s, AclObject::Database(db.to_string()), acl::CREATE, what)
}

/// CREATE STREAM: write on the stream's and the output's databases, read
/// of the trigger table and of every table the query reads.
fn check_create_stream(s: &Session, c: &td::Compiled) -> Result<()> {
    let what = "CREATE STREAM";
    need_stream_write(s, &c.def.database, what)?;
    let read = |db: &str, name: &str| -> Result<()> {
        need(s, AclObject::Database(db.to_string()), acl::CONNECT, what)?;
        // A child table's rows are its supertable's.
        let rel = match s.engine.catalog.child_table(db, name) {
            Some(ch) => ch.stable,
            None => name.to_string(),
        };
        if s.engine.catalog.table(db, &rel).is_some() || s.engine.catalog.view(db, &rel).is_some() {
            need(s, AclObject::Relation(db.to_string(), rel), acl::SELECT, what)?;
        }
        Ok(())
    };
    if let Some(t) = &c.trigger {
        read(&t.database, &t.name)?;
    }
    if let Some(q) = &c.cs.query {
        let mut names = Vec::new();
        let _ = ast::visit_relations(q, |n| {
            names.push(n.clone());
            std::ops::ControlFlow::<()>::Continue(())
        });
        for n in names {
            let (db, t) = td::qualified(&c.def.database, &n)?;
            if t.starts_with("%%") {
                continue;
            }
            read(&db, &t)?;
        }
    }
    if let Some((odb, oname)) = &c.output {
        need(s, AclObject::Database(odb.clone()), acl::CREATE, what)?;
        if s.engine.catalog.table(odb, oname).is_some() {
            need(s, AclObject::Relation(odb.clone(), oname.clone()), acl::INSERT, what)?;
        }
    }
    Ok(())
}

/// Snode statements are for superusers (TDengine's root).
fn check_root(s: &Session) -> Result<()> {
    if !s.engine.catalog.role(&s.user).is_some_and(|r| r.superuser) {
        bail!(InsufficientPrivilege, "Insufficient privilege for operation");
    }
    Ok(())
}

/// `SELECT * FROM information_schema.<name>`.
fn system_query(s: &mut Session, name: &str) -> Result<QueryResult> {
    let q = crate::parser::parse_query(&format!("SELECT * FROM information_schema.{name}"))?;
    s.execute_sql_statement(&ast::Statement::Query(Box::new(q)), Params::default())
}

fn stream_def(s: &Session, name: &ast::ObjectName) -> Result<StreamDef> {
    let (db, n) = td::qualified(&s.database, name)?;
    s.engine.catalog.stream(&db, &n).ok_or_else(|| err!(UndefinedObject, "Stream not exist: {db}.{n}"))
}

/// A stream's status: Stopped, Failed (its last evaluation failed) or Running.
pub fn status(s: &Session, d: &StreamDef) -> String {
    if d.status == "Stopped" {
        return d.status.clone();
    }
    match s.engine.catalog.stream_state_header(&d.database, &d.name).last_error {
        Some(_) => "Failed".into(),
        None => d.status.clone(),
    }
}

/// TDengine's types in weir's: BINARY / NCHAR / VARBINARY are strings,
/// FLOAT is 4 bytes, unsigned integers take the next signed size.
fn td_type(dt: &ast::DataType) -> Result<SqlType> {
    use ast::DataType as D;
    Ok(match dt {
        D::Binary(_) | D::Varbinary(_) | D::Nvarchar(_) => SqlType::Varchar,
        D::Float(_) => SqlType::Float4,
        D::TinyIntUnsigned(_) => SqlType::Int2,
        D::SmallIntUnsigned(_) | D::Int2Unsigned(_) => SqlType::Int4,
        D::IntUnsigned(_) | D::Int4Unsigned(_) | D::IntegerUnsigned(_) | D::BigIntUnsigned(_) | D::Int8Unsigned(_) => SqlType::Int8,
        D::Custom(name, _) => {
            let n = name.0.last().map(|p| p.to_string().to_lowercase()).unwrap_or_default();
            match n.as_str() {
                "nchar" | "varbinary" | "json" => SqlType::Varchar,
                _ => crate::planner::sql_type(dt)?,
            }
        }
        other => crate::planner::sql_type(other)?,
    })
}

fn column_defs(v: &[ast::ColumnDef]) -> Result<Vec<ColumnDef>> {
    let mut out: Vec<ColumnDef> = Vec::new();
    for c in v {
        let name = ident(&c.name);
        if out.iter().any(|x| x.name == name) || name == TBNAME {
            bail!(DuplicateColumn, "Duplicated column names: \"{name}\"");
        }
        let ty = td_type(&c.data_type)?;
        if ty == SqlType::Interval {
            bail!(FeatureNotSupported, "column \"{name}\" cannot be of type interval");
        }
        out.push(ColumnDef { name, ty, nullable: true, default: None, precision: None, typmod: None, user_type: None });
    }
    Ok(out)
}

/// A supertable: a weir table `(data columns, tbname, tags)` with primary
/// key `(tbname, tags)` and the first column as its time index.
pub fn stable_table(db: &str, name: &str, cols: Vec<ColumnDef>, tags: Vec<ColumnDef>) -> Result<(TableDef, SuperTableDef)> {
    match cols.first() {
        Some(c) if c.ty.is_timestamp() => {}
        _ => bail!(InvalidTableDefinition, "Invalid first column, only timestamp type is allowed"),
    }
    if tags.iter().any(|t| cols.iter().any(|c| c.name == t.name)) {
        bail!(DuplicateColumn, "Duplicated column names: a tag has the name of a column");
    }
    let sdef = SuperTableDef {
        database: db.to_string(),
        name: name.to_string(),
        tags: tags.iter().map(|t| t.name.clone()).collect(),
        columns: cols.iter().map(|c| c.name.clone()).collect(),
    };
    let mut columns = cols;
    columns[0].nullable = false;
    let mut primary_key = vec![columns.len()];
    columns.push(ColumnDef {
        name: TBNAME.into(),
        ty: SqlType::Varchar,
        nullable: false,
        default: None,
        precision: None,
        typmod: None,
        user_type: None,
    });
    for t in tags {
        primary_key.push(columns.len());
        columns.push(t);
    }
    let t = TableDef::time_first(db, name, columns, primary_key);
    Ok((t, sdef))
}

fn create_stable(s: &mut Session, c: &CreateStable) -> Result<QueryResult> {
    let (db, name) = td::qualified(&s.database, &c.name)?;
    let cat = &s.engine.catalog;
    if !cat.database_exists(&db) {
        bail!(UndefinedDatabase, "Database not exist: {db}");
    }
    if cat.table(&db, &name).is_some() || cat.view(&db, &name).is_some() {
        if c.if_not_exists {
            return cmd("CREATE STABLE");
        }
        bail!(DuplicateTable, "STable already exists: {name}");
    }
    let (mut t, sdef) = stable_table(&db, &name, column_defs(&c.columns)?, column_defs(&c.tags)?)?;
    t.id = cat.next_table_id()?;
    crate::flow::create_table(&env(s), &t)?;
    cat.put_stable(&sdef)?;
    cmd("CREATE STABLE")
}

/// Tag values of a child table, as text, in the supertable's order.
fn tag_values(s: &Session, sdef: &SuperTableDef, t: &TableDef, names: &[ast::Ident], exprs: &[ast::Expr]) -> Result<Vec<Option<String>>> {
    let order: Vec<String> = if names.is_empty() { sdef.tags.clone() } else { names.iter().map(ident).collect() };
    if order.len() != exprs.len() {
        bail!(InvalidParameterValue, "Tags number not matched: {} tags, {} values", order.len(), exprs.len());
    }
    let planner = s.planner(Params::default());
    let scope = crate::planner::Scope::new(vec![], None);
    let mut out = vec![None; sdef.tags.len()];
    for (n, e) in order.iter().zip(exprs) {
        let k = sdef.tags.iter().position(|x| x == n).ok_or_else(|| err!(UndefinedColumn, "Invalid tag name: {n}"))?;
        let ty = t.columns[t.column_index(n).expect("a tag is a column")].ty;
        let bound = planner.bind_expr(e, &scope, None)?;
        let v = planner.eval_const(&bound)?;
        // The value must convert to the tag's type.
        let arr = crate::types::values_to_array(std::slice::from_ref(&v), infer(&v))?;
        let cast = crate::exec::expr::cast_array(&arr, infer(&v), ty)?;
        out[k] = match crate::types::value_at(cast.as_ref(), 0) {
            Value::Null => None,
            Value::Text(x) => Some(x),
            other => Some(crate::types::format_value(&other)),
        };
    }
    Ok(out)
}

fn infer(v: &Value) -> SqlType {
    match v {
        Value::Bool(_) => SqlType::Bool,
        Value::Int(_) => SqlType::Int8,
        Value::Float(_) => SqlType::Float8,
        Value::Timestamp(_) => SqlType::Timestamp,
        _ => SqlType::Text,
    }
}

fn create_child(s: &mut Session, c: &ChildSpec) -> Result<()> {
    let (db, name) = td::qualified(&s.database, &c.name)?;
    let (sdb, sname) = td::qualified(&s.database, &c.stable)?;
    if sdb != db {
        bail!(FeatureNotSupported, "a child table must be in its supertable's database");
    }
    let cat = &s.engine.catalog;
    let sdef = cat.stable(&db, &sname).ok_or_else(|| err!(UndefinedTable, "STable not exist: {sname}"))?;
    let t = cat.table(&db, &sname).ok_or_else(|| err!(UndefinedTable, "STable not exist: {sname}"))?;
    if let Some(old) = cat.child_table(&db, &name) {
        if c.if_not_exists && old.stable == sname {
            return Ok(());
        }
        bail!(DuplicateTable, "Table already exists: {name}");
    }
    let tags = tag_values(s, &sdef, &t, &c.tag_names, &c.tags)?;
    td::ensure_child(cat, &db, &sdef, &name, &tags)?;
    Ok(())
}

fn drop_stable(s: &mut Session, db: &str, name: &str) -> Result<()> {
    let cat = &s.engine.catalog;
    if let Some(st) = cat.streams().into_iter().find(|x| {
        td::parse_def(x).ok().and_then(|c| c.from).and_then(|f| td::qualified(&x.database, &f).ok())
            == Some((db.to_string(), name.to_string()))
    }) {
        bail!(ObjectInUse, "Cannot drop supertable \"{name}\": stream \"{}\" triggers on it", st.name);
    }
    for c in cat.child_tables(db).into_iter().filter(|c| c.stable == name) {
        let _ = cat.drop_view(db, &c.name);
        cat.drop_child_table(db, &c.name)?;
    }
    let def = cat.drop_table(db, name)?;
    for r in 0..def.regions.max(1) {
        s.engine.storage.drop_region(crate::storage::region_id(def.id, r))?;
    }
    cat.drop_stable(db, name)
}

/// An INSERT into a child table as an INSERT into its supertable: `tbname`
/// and the tags are prepended to the column list and to every row.
fn insert_statement(s: &Session, table: &ast::ObjectName, columns: &[ast::Ident], rows: &[Vec<ast::Expr>]) -> Result<ast::Statement> {
    let template = match crate::parser::parse("INSERT INTO t VALUES (1)")?.pop() {
        Some(crate::parser::Statement::Sql(ast::Statement::Insert(i))) => i,
        _ => bail!(Internal, "INSERT template did not parse"),
    };
    let mut ins = template;
    ins.table = ast::TableObject::TableName(table.clone());
    ins.columns = columns.iter().map(|c| ast::ObjectName::from(vec![c.clone()])).collect();
    if let Some(src) = &mut ins.source {
        if let ast::SetExpr::Values(v) = src.body.as_mut() {
            v.rows = rows.iter().map(|r| ast::Parens::with_empty_span(r.clone())).collect();
        }
    }
    let stmt = ast::Statement::Insert(ins);
    Ok(rewrite_insert(s, &stmt)?.unwrap_or(stmt))
}

fn run_insert(s: &mut Session, stmt: &ast::Statement) -> Result<QueryResult> {
    dml::execute(s, stmt, Params::default())
}

fn lit(v: &Option<String>) -> ast::Expr {
    match v {
        Some(t) => ast::Expr::Value(ast::Value::SingleQuotedString(t.clone()).with_empty_span()),
        None => ast::Expr::Value(ast::Value::Null.with_empty_span()),
    }
}

/// Whether `ins` writes a child table ([`rewrite_insert`] rewrites it).
fn is_child_insert(s: &Session, ins: &ast::Insert) -> bool {
    let ast::TableObject::TableName(n) = &ins.table else { return false };
    td::qualified(&s.database, n).is_ok_and(|(db, name)| s.engine.catalog.child_table(&db, &name).is_some())
}

/// INSERT into a child table → INSERT into its supertable (None: not a
/// child table).
pub fn rewrite_insert(s: &Session, stmt: &ast::Statement) -> Result<Option<ast::Statement>> {
    let ast::Statement::Insert(ins) = stmt else { return Ok(None) };
    let ast::TableObject::TableName(n) = &ins.table else { return Ok(None) };
    let Ok((db, name)) = td::qualified(&s.database, n) else { return Ok(None) };
    let cat = &s.engine.catalog;
    let Some(child) = cat.child_table(&db, &name) else { return Ok(None) };
    let sdef = cat.stable(&db, &child.stable).ok_or_else(|| err!(UndefinedTable, "STable not exist: {}", child.stable))?;
    let mut ins = ins.clone();
    ins.table = ast::TableObject::TableName(ast::ObjectName::from(vec![
        ast::Ident::with_quote('"', &db),
        ast::Ident::with_quote('"', &child.stable),
    ]));
    // Typed, so that INSERT … SELECT (where a bare literal is text) works too.
    let table = cat.table(&db, &child.stable).ok_or_else(|| err!(UndefinedTable, "STable not exist: {}", child.stable))?;
    let typed = |v: &Option<String>, col: &str| -> Result<ast::Expr> {
        let ty = table.column_index(col).map(|i| table.columns[i].type_name()).unwrap_or_else(|| "text".into());
        crate::parser::parse_expr(&format!("CAST({} AS {ty})", lit(v)))
    };
    let mut prefix: Vec<ast::Expr> = vec![typed(&Some(name.clone()), TBNAME)?];
    for (v, t) in child.tags.iter().zip(&sdef.tags) {
        prefix.push(typed(v, t)?);
    }
    let mut columns: Vec<ast::ObjectName> = vec![ast::ObjectName::from(vec![ast::Ident::new(TBNAME)])];
    columns.extend(sdef.tags.iter().map(|t| ast::ObjectName::from(vec![ast::Ident::with_quote('"', t)])));
    if ins.columns.is_empty() {
        columns.extend(sdef.columns.iter().map(|c| ast::ObjectName::from(vec![ast::Ident::with_quote('"', c)])));
    } else {
        for c in &ins.columns {
            let cn = c.to_string().trim_matches('"').to_lowercase();
            if cn == TBNAME || sdef.tags.contains(&cn) {
                bail!(UndefinedColumn, "Invalid column name: {cn}");
            }
        }
        columns.extend(ins.columns.iter().cloned());
    }
    ins.columns = columns;
    let Some(src) = &mut ins.source else { bail!(FeatureNotSupported, "INSERT into a child table needs VALUES or a query") };
    match src.body.as_mut() {
        ast::SetExpr::Values(v) => {
            for r in &mut v.rows {
                let mut row = prefix.clone();
                row.append(&mut r.content);
                r.content = row;
            }
        }
        _ => {
            // INSERT … SELECT: the query's rows with the child's identity in front.
            let lits: Vec<String> = prefix.iter().map(|e| e.to_string()).collect();
            let q = crate::parser::parse_query(&format!("SELECT {}, \"?td\".* FROM ({src}) AS \"?td\"", lits.join(", ")))?;
            *src = Box::new(q);
        }
    }
    Ok(Some(ast::Statement::Insert(ins)))
}

/// Statements of PostgreSQL's grammar that mean something else on
/// TDengine's objects: INSERT into a child table, DROP TABLE of a child
/// table or a supertable.
pub fn intercept(s: &mut Session, stmt: &ast::Statement, params: &Params) -> Option<Result<QueryResult>> {
    match stmt {
        // A child table's rows are rewritten as AST: a scanned bulk
        // INSERT's other rows join its VALUES first.
        ast::Statement::Insert(ins) if s.literal_rows.is_some() && is_child_insert(s, ins) => {
            let rows = s.literal_rows.take()?;
            let full = ast::Statement::Insert(dml::with_literal_rows(ins, &rows));
            intercept(s, &full, params).or_else(|| Some(s.execute_sql_statement(&full, params.clone())))
        }
        ast::Statement::Insert(_) => match rewrite_insert(s, stmt) {
            Ok(Some(rewritten)) => Some(dml::execute(s, &rewritten, params.clone())),
            Ok(None) => None,
            Err(e) => Some(Err(e)),
        },
        ast::Statement::Drop { object_type: ast::ObjectType::Table, names, if_exists, .. } => {
            let cat = &s.engine.catalog;
            let mut td_names = Vec::new();
            for n in names {
                let (db, name) = td::qualified(&s.database, n).ok()?;
                if cat.child_table(&db, &name).is_some() || cat.stable(&db, &name).is_some() {
                    td_names.push((db, name));
                }
            }
            if td_names.is_empty() {
                return None;
            }
            if td_names.len() != names.len() {
                return Some(Err(err!(FeatureNotSupported, "DROP TABLE cannot mix TDengine tables with other tables")));
            }
            let _ = if_exists;
            Some((|| {
                for (db, name) in td_names {
                    if s.engine.catalog.stable(&db, &name).is_some() {
                        drop_stable(s, &db, &name)?;
                    } else {
                        drop_child(s, &db, &name)?;
                    }
                }
                cmd("DROP TABLE")
            })())
        }
        _ => None,
    }
}

/// Drop a child table: its rows, its view and its entry.
fn drop_child(s: &mut Session, db: &str, name: &str) -> Result<()> {
    let cat = &s.engine.catalog;
    let Some(child) = cat.child_table(db, name) else { return Ok(()) };
    let q = format!("DELETE FROM \"{db}\".\"{}\" WHERE {TBNAME} = '{}'", child.stable.replace('"', "\"\""), name.replace('\'', "''"));
    if let Some(crate::parser::Statement::Sql(stmt)) = crate::parser::parse(&q)?.pop() {
        dml::execute(s, &stmt, Params::default())?;
    }
    let cat = &s.engine.catalog;
    let _ = cat.drop_view(db, name);
    cat.drop_child_table(db, name)?;
    drop_output_subtables(s, db, &child)
}

/// DELETE_OUTPUT_TABLE: a dropped trigger child table's output subtable
/// goes too (streams partitioned by tbname, which CREATE STREAM checks).
fn drop_output_subtables(s: &mut Session, db: &str, child: &crate::catalog::ChildTableDef) -> Result<()> {
    let engine = s.engine.clone();
    let mut drop = Vec::new();
    {
        let _g = engine.streams.exclusive();
        for def in engine.catalog.streams() {
            let Ok(cs) = td::parse_def(&def) else { continue };
            if !cs.options.iter().any(|o| matches!(o, StreamOption::DeleteOutputTable)) {
                continue;
            }
            let (Some(from), Some(into)) = (&cs.from, &cs.into) else { continue };
            let (tdb, tname) = td::qualified(&def.database, from)?;
            if tdb != db || (tname != child.stable && tname != child.name) {
                continue;
            }
            let (odb, oname) = td::qualified(&def.database, into)?;
            let mut st = engine.catalog.stream_state(&def.database, &def.name);
            let key = td::group_key(&[Some(child.name.clone())]);
            st.outputs.remove(&key);
            if let Some(sub) = st.subtables.remove(&key) {
                if engine.catalog.child_table(&odb, &sub).is_some_and(|c| c.stable == oname) {
                    drop.push((odb, sub));
                }
            }
            engine.catalog.put_stream_state(&def.database, &def.name, &st)?;
        }
    }
    for (odb, sub) in drop {
        drop_child(s, &odb, &sub)?;
    }
    Ok(())
}

/// SHOW TABLES in TDengine's sense: child and plain tables, not supertables.
pub fn show_tables_names(s: &Session, db: &str, names: &mut Vec<String>) {
    let cat = &s.engine.catalog;
    let stables: Vec<String> = cat.stables(db).into_iter().map(|x| x.name).collect();
    names.retain(|n| !stables.contains(n));
    names.extend(cat.child_tables(db).into_iter().map(|c| c.name));
    names.sort();
}

/// ADMIN FLUSH_STREAM('name'): run the stream now (its pending
/// recalculations, then new and changed windows). Returns the rows written.
pub fn flush_stream(s: &Session, name: &str) -> Result<i64> {
    if s.block.is_some() {
        bail!(ActiveSqlTransaction, "ADMIN FLUSH_STREAM cannot run inside a transaction block");
    }
    let n = crate::parser::parse_object_name(name)?;
    let def = stream_def(s, &n)?;
    Ok(s.engine.streams.run_one(&env(s), &def)? as i64)
}

fn create_stream(s: &mut Session, cs: &CreateStream) -> Result<QueryResult> {
    let (db, name) = td::qualified(&s.database, &cs.name)?;
    let engine = s.engine.clone();
    let cat = &engine.catalog;
    if !cat.database_exists(&db) {
        bail!(UndefinedDatabase, "Database not exist: {db}");
    }
    if cat.stream(&db, &name).is_some() {
        if cs.if_not_exists {
            return cmd("CREATE STREAM");
        }
        bail!(DuplicateObject, "Stream already exists: {name}");
    }
    let snodes = cat.snodes();
    if snodes.is_empty() {
        return Err(err!(ObjectNotInPrerequisiteState, "No Snode is available").with_hint("CREATE SNODE ON DNODE 1 first"));
    }
    validate(cs)?;
    // Balance: the snode with the fewest streams.
    let snode =
        snodes.iter().min_by_key(|n| (cat.streams().iter().filter(|x| x.snode == n.id).count(), n.id)).map(|n| n.id).unwrap_or(DNODE_ID);
    let def = StreamDef {
        id: cat.next_td_id()?,
        database: db.clone(),
        name: name.clone(),
        sql: cs.to_string(),
        status: "Running".into(),
        snode,
        created_ms: crate::flow::batching::now_ms(),
    };
    let env = env(s);
    let c = td::compile(&env, &def)?;
    check_create_stream(s, &c)?;
    td::check_placeholders(&c)?;
    td::check_notify_where(&env, &c)?;
    if let Some(t) = &c.trigger {
        let stable_trigger = matches!(t.kind, TableKind::Stable(_));
        let by_tbname = cs.partition.iter().any(|p| ident(p) == TBNAME);
        if stable_trigger
            && matches!(cs.trigger, StreamTrigger::State { .. } | StreamTrigger::Event { .. } | StreamTrigger::Count { .. })
            && !by_tbname
        {
            bail!(InvalidParameterValue, "Invalid stream option: {} on a supertable needs PARTITION BY tbname", cs.trigger.kind());
        }
        // The trigger rows must be readable (partition columns checked).
        td::read_trigger(&env, &c, None)?;
    }
    // The output table: created now, or an existing one that matches exactly.
    if let Some((odb, oname)) = &c.output {
        if !cat.database_exists(odb) {
            bail!(UndefinedDatabase, "Database not exist: {odb}");
        }
        if c.trigger.as_ref().is_some_and(|t| (t.database.as_str(), t.name.as_str()) == (odb.as_str(), oname.as_str())) {
            bail!(InvalidParameterValue, "Invalid stream output table: it is the trigger table");
        }
        if cs.query.is_none() {
            bail!(InvalidParameterValue, "Invalid stream: INTO needs AS query");
        }
        let cols = td::output_columns(&env, &c)?;
        let tag_types = output_tag_types(&env, &c)?;
        let (mut t, sdef) = td::output_table_def(&c, &cols, &tag_types, odb, oname)?;
        match cat.table(odb, oname) {
            Some(existing) => {
                if existing.columns.len() != t.columns.len()
                    || existing.columns.iter().zip(&t.columns).any(|(a, b)| a.name != b.name || a.ty != b.ty)
                    || sdef.is_some() != cat.stable(odb, oname).is_some()
                {
                    return Err(err!(DatatypeMismatch, "Out table cols or tags mismatch: \"{oname}\" does not match the stream's result")
                        .with_detail(format!(
                            "the stream writes ({})",
                            t.columns.iter().map(|c| format!("{} {}", c.name, c.type_name())).collect::<Vec<_>>().join(", ")
                        )));
                }
            }
            None => {
                if cat.view(odb, oname).is_some() {
                    bail!(WrongObjectType, "\"{oname}\" is not a table");
                }
                t.id = cat.next_table_id()?;
                crate::flow::create_table(&env, &t)?;
                if let Some(sd) = &sdef {
                    cat.put_stable(sd)?;
                }
            }
        }
    } else if cs.query.is_some() && cs.notify.is_none() {
        bail!(InvalidParameterValue, "Invalid stream: a query needs INTO or NOTIFY");
    }
    let _g = engine.streams.exclusive();
    cat.put_stream(&def)?;
    // History: recorded (not computed) unless FILL_HISTORY asks for it.
    if let Err(e) = td::run(&env, &s.engine.notify, &def, td::Mode::Init, None) {
        cat.drop_stream(&db, &name)?;
        return Err(e);
    }
    cmd("CREATE STREAM")
}

/// The output supertable's tags: the TAGS clause, else the partition
/// columns (`tbname` as `tag_tbname`).
fn output_tag_types(env: &Env, c: &td::Compiled) -> Result<Vec<(String, SqlType)>> {
    if !td::is_grouped(c) {
        if !c.cs.tags.is_empty() {
            bail!(InvalidParameterValue, "Invalid stream: TAGS needs PARTITION BY");
        }
        return Ok(vec![]);
    }
    if !c.cs.tags.is_empty() {
        return c.cs.tags.iter().map(|t| Ok((ident(&t.name), td_type(&t.data_type)?))).collect();
    }
    let mut out = Vec::new();
    for p in &c.cs.partition {
        let n = ident(p);
        if n == TBNAME {
            out.push((TAG_TBNAME_NAME.to_string(), SqlType::Varchar));
            continue;
        }
        let ty = c
            .trigger
            .as_ref()
            .and_then(|t| t.table.column_index(&n).map(|i| t.table.columns[i].ty))
            .ok_or_else(|| err!(UndefinedColumn, "Invalid PARTITION BY column: {n}"))?;
        out.push((n, ty));
    }
    let _ = env;
    Ok(out)
}

const TAG_TBNAME_NAME: &str = td::TAG_TBNAME;

/// The combinations TDengine refuses.
fn validate(cs: &CreateStream) -> Result<()> {
    let mut seen: Vec<&str> = Vec::new();
    for o in &cs.options {
        if seen.contains(&o.name()) {
            bail!(InvalidParameterValue, "Invalid stream option: {} appears more than once", o.name());
        }
        seen.push(o.name());
    }
    let has = |n: &str| seen.contains(&n);
    let period = matches!(cs.trigger, StreamTrigger::Period { .. });
    if has("FILL_HISTORY") && has("FILL_HISTORY_FIRST") {
        bail!(InvalidParameterValue, "Invalid stream option: FILL_HISTORY and FILL_HISTORY_FIRST cannot be used together");
    }
    if period && (has("FILL_HISTORY") || has("FILL_HISTORY_FIRST")) {
        bail!(InvalidParameterValue, "Invalid stream option: FILL_HISTORY is not supported for PERIOD trigger");
    }
    if period && has("IDLE_TIMEOUT") {
        // A PERIOD tick reads no trigger rows of its own to see groups by.
        bail!(InvalidParameterValue, "Invalid stream option: IDLE_TIMEOUT is not supported for PERIOD trigger");
    }
    if period && has("WATERMARK") {
        bail!(InvalidParameterValue, "Invalid stream option: WATERMARK is not supported for PERIOD trigger");
    }
    if has("DELETE_OUTPUT_TABLE") && !(cs.partition.len() == 1 && ident(&cs.partition[0]) == TBNAME) {
        bail!(InvalidParameterValue, "Invalid stream option: DELETE_OUTPUT_TABLE needs PARTITION BY tbname");
    }
    for o in &cs.options {
        if let StreamOption::EventType(t) = o {
            for x in t {
                match x.as_str() {
                    "WINDOW_OPEN" | "WINDOW_CLOSE" => {}
                    "IDLE" | "RESUME" if has("IDLE_TIMEOUT") => {}
                    "IDLE" | "RESUME" => bail!(InvalidParameterValue, "Invalid stream option: EVENT_TYPE({x}) needs IDLE_TIMEOUT"),
                    _ => bail!(
                        InvalidParameterValue,
                        "Invalid stream option: EVENT_TYPE({x}) is not WINDOW_OPEN, WINDOW_CLOSE, IDLE or RESUME"
                    ),
                }
            }
        }
        if let StreamOption::IdleTimeout(d) = o {
            if d.micros.is_none_or(|m| !(1_000_000..=10 * 86_400_000_000).contains(&m)) {
                bail!(InvalidParameterValue, "Invalid stream option: IDLE_TIMEOUT must be between 1s and 10d");
            }
        }
        if let StreamOption::MaxDelay(d) = o {
            if d.micros.is_none_or(|m| m < 3_000_000) {
                bail!(InvalidParameterValue, "Invalid stream option: MAX_DELAY must be at least 3s");
            }
        }
    }
    match &cs.trigger {
        StreamTrigger::Period { period, offset } => {
            let p = period.micros.unwrap_or(0);
            if !(10_000..=3650 * 86_400_000_000).contains(&p) {
                bail!(InvalidParameterValue, "Invalid stream: PERIOD must be between 10a and 3650d");
            }
            if offset.as_ref().and_then(|o| o.micros).is_some_and(|o| o >= 86_400_000_000) {
                bail!(InvalidParameterValue, "Invalid stream: PERIOD offset must be less than 1d");
            }
        }
        StreamTrigger::Count { count, .. } if *count < 1 => {
            bail!(InvalidParameterValue, "Invalid stream: COUNT_WINDOW count must be at least 1")
        }
        _ if cs.from.is_none() => bail!(InvalidParameterValue, "Invalid stream: {} trigger needs FROM a trigger table", cs.trigger.kind()),
        _ => {}
    }
    if let Some(n) = &cs.notify {
        let windowed = !matches!(cs.trigger, StreamTrigger::Period { .. } | StreamTrigger::Sliding { .. });
        if windowed && n.events.is_empty() {
            bail!(InvalidParameterValue, "Invalid stream: NOTIFY on a window trigger needs ON (WINDOW_OPEN|WINDOW_CLOSE)");
        }
        for u in &n.urls {
            td_notify::check_url(u)?;
        }
        for e in &n.events {
            match e.to_uppercase().as_str() {
                "WINDOW_OPEN" | "WINDOW_CLOSE" => {}
                "IDLE" | "RESUME" if has("IDLE_TIMEOUT") => {}
                "IDLE" | "RESUME" => bail!(InvalidParameterValue, "Invalid stream: NOTIFY ON ({e}) needs IDLE_TIMEOUT"),
                _ => bail!(InvalidParameterValue, "Invalid stream notify event type: {e}"),
            }
        }
        for o in &n.options {
            if !matches!(o.to_uppercase().as_str(), "NOTIFY_HISTORY" | "ON_FAILURE_PAUSE") {
                bail!(InvalidParameterValue, "Invalid stream notify option: {o}");
            }
        }
    }
    if cs.query.is_none() && cs.into.is_some() {
        bail!(InvalidParameterValue, "Invalid stream: INTO needs AS query");
    }
    Ok(())
}
