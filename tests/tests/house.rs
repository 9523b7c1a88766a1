//! The house rules, checked on the sources: no module imports a module that imports it
//! back (at any level: a crate's top-level modules, and the submodules of one module
//! among themselves), and no source file but tests is over 1,000 lines.
//!
//! Imports are read as `../shared/tools/modcycles.py` reads them: the `crate::` and
//! `super::` paths of the code before its first `#[cfg(test)]`, comments left out.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The most lines a source file (not a test) may have.
const MAX_LINES: usize = 1000;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the tests crate lives in the workspace")
        .to_path_buf()
}

/// The crates of the workspace: every directory with a `Cargo.toml` and a `src/`.
fn crates() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(workspace())
        .expect("the workspace can be read")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("Cargo.toml").is_file() && p.join("src").is_dir())
        .collect();
    out.sort();
    out
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Is this file test code: a `tests.rs`, or inside a `tests` directory?
fn is_test_file(src: &Path, file: &Path) -> bool {
    let rel = file.strip_prefix(src).unwrap_or(file);
    rel.file_name().is_some_and(|n| n == "tests.rs")
        || rel
            .parent()
            .is_some_and(|d| d.components().any(|c| c.as_os_str() == "tests"))
}

/// A file's module path within its crate (`sched/src/cycle/dispatch.rs` ->
/// `["cycle", "dispatch"]`; `lib.rs`, `main.rs` and `mod.rs` name their directory).
fn module_path(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap_or(file).with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts
        .last()
        .is_some_and(|l| l == "lib" || l == "main" || l == "mod")
    {
        parts.pop();
    }
    parts
}

/// The code a file's imports are read from: up to its first `#[cfg(test)]`, without
/// comment lines.
fn code_of(text: &str) -> String {
    let text = match text.find("#[cfg(test)]") {
        Some(i) => &text[..i],
        None => text,
    };
    text.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every `crate::a::b` and `super::a` path in the code, as its segments (a braced group
/// gives one path per member, by its first segment).
fn paths(code: &str) -> Vec<(bool, Vec<String>)> {
    let bytes = code.as_bytes();
    let mut out = Vec::new();
    for (kind, crate_path) in [("crate::", true), ("super::", false)] {
        let mut from = 0;
        while let Some(i) = code[from..].find(kind) {
            let at = from + i;
            from = at + kind.len();
            let boundary = at == 0 || {
                let c = bytes[at - 1] as char;
                !(c.is_alphanumeric() || c == '_')
            };
            if !boundary {
                continue;
            }
            let rest = &code[from..];
            if let Some(group) = rest.strip_prefix('{') {
                let inner = group.split('}').next().unwrap_or("");
                for member in inner.split(',') {
                    let first = member.trim().split("::").next().unwrap_or("").trim();
                    if !first.is_empty() {
                        out.push((crate_path, vec![first.to_string()]));
                    }
                }
                continue;
            }
            let segs: Vec<String> = rest
                .split("::")
                .map(|s| {
                    s.chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect::<String>()
                })
                .take_while(|s| !s.is_empty())
                .collect();
            if !segs.is_empty() {
                out.push((crate_path, segs));
            }
        }
    }
    out
}

/// The import loops of one crate: per module with submodules (the crate's root
/// included), each set of its children that import each other round.
fn import_loops(krate: &Path) -> Vec<String> {
    let src = krate.join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let files: Vec<PathBuf> = files
        .into_iter()
        .filter(|f| !is_test_file(&src, f) && !f.starts_with(src.join("bin")))
        .collect();
    let modules: BTreeSet<Vec<String>> = files.iter().map(|f| module_path(&src, f)).collect();
    // Per parent module, edges between its children.
    let mut edges: BTreeMap<Vec<String>, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for f in &files {
        let from = module_path(&src, f);
        if from.is_empty() {
            continue;
        }
        let text = std::fs::read_to_string(f).unwrap_or_default();
        for (crate_path, segs) in paths(&code_of(&text)) {
            let mut target: Vec<String> = if crate_path {
                Vec::new()
            } else {
                // `super::` from a file is its parent module.
                from[..from.len() - 1].to_vec()
            };
            for s in segs {
                let mut next = target.clone();
                next.push(s);
                if modules.contains(&next) {
                    target = next;
                } else {
                    break;
                }
            }
            if target.is_empty() {
                continue;
            }
            // The children of the deepest module both lie in.
            let common = from.iter().zip(&target).take_while(|(a, b)| a == b).count();
            if common >= from.len() || common >= target.len() {
                continue; // one contains the other
            }
            edges
                .entry(from[..common].to_vec())
                .or_default()
                .entry(from[common].clone())
                .or_default()
                .insert(target[common].clone());
        }
    }
    let mut loops = Vec::new();
    for (parent, graph) in &edges {
        for component in strongly_connected(graph) {
            let place = if parent.is_empty() {
                krate
                    .file_name()
                    .map_or(String::new(), |n| n.to_string_lossy().into_owned())
            } else {
                format!(
                    "{}::{}",
                    krate.file_name().unwrap_or_default().to_string_lossy(),
                    parent.join("::")
                )
            };
            let ties: Vec<String> = component
                .iter()
                .flat_map(|a| {
                    graph[a]
                        .iter()
                        .filter(|b| component.contains(b))
                        .map(move |b| format!("{a} -> {b}"))
                })
                .collect();
            loops.push(format!(
                "{place}: {} ({})",
                component.join(", "),
                ties.join("; ")
            ));
        }
    }
    loops
}

/// Tarjan's strongly connected components of more than one node.
fn strongly_connected(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct Walk<'g> {
        graph: &'g BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        on_stack: BTreeSet<&'g str>,
        out: Vec<Vec<String>>,
    }
    impl<'g> Walk<'g> {
        fn visit(&mut self, v: &'g str) {
            let n = self.index.len();
            self.index.insert(v, n);
            self.low.insert(v, n);
            self.stack.push(v);
            self.on_stack.insert(v);
            let next: Vec<&'g str> = self
                .graph
                .get(v)
                .map(|s| s.iter().map(String::as_str).collect())
                .unwrap_or_default();
            for w in next {
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let low = self.low[v].min(self.low[w]);
                    self.low.insert(v, low);
                } else if self.on_stack.contains(w) {
                    let low = self.low[v].min(self.index[w]);
                    self.low.insert(v, low);
                }
            }
            if self.low[v] == self.index[v] {
                let mut component = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack.remove(w);
                    component.push(w.to_string());
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort();
                    self.out.push(component);
                }
            }
        }
    }
    let mut walk = Walk {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    let nodes: BTreeSet<&str> = graph
        .iter()
        .flat_map(|(a, bs)| std::iter::once(a.as_str()).chain(bs.iter().map(String::as_str)))
        .collect();
    for v in nodes {
        if !walk.index.contains_key(v) {
            walk.visit(v);
        }
    }
    walk.out
}

#[test]
fn no_module_imports_a_module_that_imports_it_back() {
    let found: Vec<String> = crates().iter().flat_map(|c| import_loops(c)).collect();
    assert!(
        found.is_empty(),
        "import loops (split the shared part out, or move the type down):\n{}",
        found.join("\n")
    );
}

#[test]
fn no_source_file_but_tests_is_over_a_thousand_lines() {
    let mut long = Vec::new();
    for krate in crates() {
        let src = krate.join("src");
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        for f in files.iter().filter(|f| !is_test_file(&src, f)) {
            let lines = std::fs::read_to_string(f)
                .unwrap_or_default()
                .lines()
                .count();
            if lines > MAX_LINES {
                long.push(format!("{} ({lines} lines)", f.display()));
            }
        }
    }
    assert!(
        long.is_empty(),
        "source files over {MAX_LINES} lines (split them by what they do):\n{}",
        long.join("\n")
    );
}

/// How many `Result<_, String>` a piece of code names: each `Result<` whose last
/// argument, at its own depth, is `String`.
fn string_errors(code: &str) -> usize {
    let mut count = 0;
    let mut rest = code;
    while let Some(at) = rest.find("Result<") {
        rest = &rest[at + "Result<".len()..];
        let (mut depth, mut last_arg) = (0usize, 0usize);
        for (i, c) in rest.char_indices() {
            match c {
                '<' | '(' | '[' => depth += 1,
                ',' if depth == 0 => last_arg = i + 1,
                '>' | ')' | ']' if depth > 0 => depth -= 1,
                '>' => {
                    if rest[last_arg..i].trim() == "String" && last_arg > 0 {
                        count += 1;
                    }
                    break;
                }
                _ => {}
            }
        }
    }
    count
}

/// The crates whose errors are all typed (`thiserror`), and the most `Result<_, String>`
/// each of the others may still have: the number only goes down.
const STRING_ERRORS_AT_MOST: &[(&str, usize)] = &[
    ("proto", 0),
    ("sched", 0),
    ("master", 0),
    ("net", 0),
    ("common", 24),
    ("execd", 10),
    ("client", 5),
];

#[test]
fn errors_are_typed_where_they_are_and_no_new_string_error_comes() {
    let mut over = Vec::new();
    for krate in crates() {
        let name = krate
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let src = krate.join("src");
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        let found: usize = files
            .iter()
            .filter(|f| !is_test_file(&src, f))
            .map(|f| string_errors(&code_of(&std::fs::read_to_string(f).unwrap_or_default())))
            .sum();
        let allowed = STRING_ERRORS_AT_MOST
            .iter()
            .find(|(k, _)| *k == name)
            .map_or(0, |(_, n)| *n);
        if found > allowed {
            over.push(format!(
                "{name}: {found} Result<_, String> (at most {allowed}): give the error a type"
            ));
        }
    }
    assert!(over.is_empty(), "{}", over.join("\n"));
}

#[test]
fn a_string_error_is_counted_and_a_typed_one_is_not() {
    assert_eq!(string_errors("fn f() -> Result<u32, String> {}"), 1);
    assert_eq!(
        string_errors("fn f() -> Result<Result<(u8, Vec<u8>), String>, Io> {}"),
        1
    );
    assert_eq!(string_errors("fn f() -> Result<String, ParseError> {}"), 0);
    assert_eq!(string_errors("type R = Result<(String, u64), String>;"), 1);
    assert_eq!(string_errors("fn f() -> std::io::Result<String> {}"), 0);
}

/// The checks can fail: a loop written into a scratch crate is found.
#[test]
fn a_loop_between_two_modules_is_found() {
    let dir = tempfile::tempdir().expect("a scratch directory");
    let krate = dir.path().join("scratch");
    let src = krate.join("src");
    std::fs::create_dir_all(src.join("a")).expect("scratch sources");
    std::fs::write(krate.join("Cargo.toml"), "").expect("scratch manifest");
    std::fs::write(src.join("lib.rs"), "mod a;\nmod b;\n").expect("lib.rs");
    std::fs::write(src.join("a.rs"), "use crate::b::B;\nmod x;\nmod y;\n").expect("a.rs");
    std::fs::write(
        src.join("b.rs"),
        "// crate::a is only named here\npub struct B;\n",
    )
    .expect("b.rs");
    std::fs::write(src.join("a/x.rs"), "use super::y::Y;\n").expect("x.rs");
    std::fs::write(
        src.join("a/y.rs"),
        "pub struct Y;\nfn f() { crate::a::x::g(); }\n#[cfg(test)]\nuse crate::b::B;\n",
    )
    .expect("y.rs");
    // A comment and a test naming the other module do not count; a::x <-> a::y does.
    assert_eq!(import_loops(&krate), ["scratch::a: x, y (x -> y; y -> x)"]);
    std::fs::write(src.join("b.rs"), "use crate::a::x;\npub struct B;\n").expect("b.rs");
    assert_eq!(import_loops(&krate).len(), 2, "{:?}", import_loops(&krate));
}
