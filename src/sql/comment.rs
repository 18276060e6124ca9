//! COMMENT ON TABLE | VIEW | COLUMN … IS '…' | NULL: the comment is kept in
//! the catalog (`catalog/comment.rs`) and read by obj_description /
//! col_description (`planner/regtypes.rs`). Other objects' comments are 0A000
//! (COMMENT ON FLOW is `flow_ddl.rs`).
//!
//! Imports `sql` siblings, `planner` name helpers and `catalog`.

use sqlparser::ast::{self, CommentObject};

use super::{QueryResult, Session};
use crate::bail;
use crate::error::Result;
use crate::planner::{ident, relation};

pub fn comment(s: &mut Session, object_type: &CommentObject, name: &ast::ObjectName, text: &Option<String>) -> Result<QueryResult> {
    let cat = &s.engine.catalog;
    let (rel_name, column) = match object_type {
        CommentObject::Table | CommentObject::View => (name.clone(), None),
        CommentObject::Column => {
            let mut parts = name.0.clone();
            let Some(col) = parts.pop().and_then(|p| p.as_ident().map(ident)) else {
                bail!(Syntax, "column name must be qualified");
            };
            if parts.is_empty() {
                bail!(Syntax, "column name must be qualified");
            }
            (ast::ObjectName(parts), Some(col))
        }
        other => bail!(FeatureNotSupported, "COMMENT ON {other} is not supported"),
    };
    let rel = relation(cat, &s.database, &rel_name)?;
    let db = rel.database()?;
    let table = cat.table(&db, &rel.name);
    let view = cat.view(&db, &rel.name);
    let columns: Vec<String> = match (&table, &view) {
        (Some(t), _) => t.columns.iter().map(|c| c.name.clone()).collect(),
        (None, Some(v)) => v.columns.clone(),
        (None, None) => bail!(UndefinedTable, "relation \"{}\" does not exist", rel.display()),
    };
    match object_type {
        CommentObject::Table if table.is_none() => bail!(WrongObjectType, "\"{}\" is not a table", rel.name),
        CommentObject::View if view.is_none() => bail!(WrongObjectType, "\"{}\" is not a view", rel.name),
        _ => {}
    }
    if let Some(c) = &column {
        if !columns.contains(c) {
            bail!(UndefinedColumn, "column \"{c}\" of relation \"{}\" does not exist", rel.name);
        }
    }
    cat.check_relation_owner(&s.user, &db, &rel.name, if view.is_some() { "view" } else { "table" })?;
    cat.set_comment(&db, &rel.name, column.as_deref(), text.clone())?;
    Ok(QueryResult::Command("COMMENT".into()))
}
