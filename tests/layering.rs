//! Dependencies point one way: server → sql → planner → exec → storage.
//! Reads every `crate::` reference under each module and fails when one
//! points up.

use std::path::Path;

fn crate_refs(dir: &Path, out: &mut Vec<(String, String)>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            crate_refs(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            let text = std::fs::read_to_string(&p).unwrap();
            for (i, line) in text.lines().enumerate() {
                let mut rest = line;
                while let Some(pos) = rest.find("crate::") {
                    let tail = &rest[pos + 7..];
                    let module: String = tail.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                    out.push((format!("{}:{}", p.display(), i + 1), module));
                    rest = &tail[..];
                }
            }
        }
    }
}

#[test]
fn dependencies_point_down() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    // module → modules it must not use.
    let rules: &[(&str, &[&str])] = &[
        ("parser", &["sql", "planner", "exec", "server", "storage", "catalog", "types", "flow"]),
        ("storage", &["sql", "planner", "exec", "server", "catalog", "flow"]),
        ("catalog", &["sql", "planner", "exec", "server", "storage", "flow"]),
        ("types", &["sql", "planner", "exec", "server", "storage", "catalog", "flow"]),
        ("exec", &["sql", "planner", "server", "catalog", "flow"]),
        ("planner", &["sql", "server", "flow"]),
        ("flow", &["sql", "server"]),
        ("sql", &["server"]),
        ("tql", &["sql", "server", "flow", "storage"]),
        ("stream", &["sql", "server", "flow"]),
    ];
    let mut bad = Vec::new();
    for (module, forbidden) in rules {
        let mut refs = Vec::new();
        crate_refs(&src.join(module), &mut refs);
        for (at, m) in refs {
            if forbidden.contains(&m.as_str()) {
                bad.push(format!("{at}: {module} uses crate::{m}"));
            }
        }
    }
    assert!(bad.is_empty(), "arrows pointing up:\n{}", bad.join("\n"));
}
