//! `qconf`'s share tree: `-Astree`/`-Mstree` files checked as SGE reads them, `-sst`'s
//! drawing, `-astree`/`-mstree` in the editor.

use gantry_common::conf::SgeFileError;
use gantry_proto::{FromMaster, ObjectKind, RefusalKind, ToMaster};

use crate::{exit, Output};

/// `-Astree`/`-Mstree`: the file read and checked here first, its refusals in SGE's
/// words: what SGE finds while reading with the file's name, what it finds in the
/// tree's form alone.
pub(super) fn read_file(path: &str) -> Result<String, Output> {
    super::files::read_checked_file(path, gantry_common::sharetree::parse_share_tree)
}

/// `-sst`: the tree drawn with its shares, each level three spaces in (`No sharetree`
/// without one, not a failure, as SGE has it).
pub(super) fn show_view() -> Output {
    match crate::conn::request(&ToMaster::ShowObject {
        kind: ObjectKind::ShareTree,
        name: String::new(),
    }) {
        Ok(FromMaster::Text(text)) => match gantry_common::sharetree::parse_share_tree(&text) {
            Ok(root) => Output::ok(
                root.walk()
                    .iter()
                    .map(|(depth, n)| format!("{}{}={}\n", "   ".repeat(*depth), n.name, n.shares))
                    .collect(),
            ),
            Err(e) => Output::fail(format!("error: {e}"), exit::FAILURE),
        },
        Ok(FromMaster::Refused(r)) if r.kind == RefusalKind::NotFound => Output {
            stdout: String::new(),
            stderr: "No sharetree\n".into(),
            code: exit::SUCCESS,
        },
        other => super::answer(other, |_| None),
    }
}

/// `-astree`/`-mstree`: the tree there is (SGE's template without one) in the editor;
/// a file left as it was changes nothing (`file unchanged`, exit 1, as SGE).
pub(super) fn edit() -> Output {
    let text = match crate::conn::request(&ToMaster::ShowObject {
        kind: ObjectKind::ShareTree,
        name: "template".into(),
    }) {
        Ok(FromMaster::Text(t)) => t,
        other => return super::answer(other, |_| None),
    };
    let edited = match super::edit(&text) {
        Ok(e) => e,
        Err(e) => return Output::fail(e, exit::FAILURE),
    };
    if edited == text {
        return Output::fail("file unchanged".into(), exit::FAILURE);
    }
    if let Err(e) = gantry_common::sharetree::parse_share_tree(&edited) {
        return Output::fail(
            match e {
                SgeFileError::Alone(m) => m,
                other => format!("error: {other}"),
            },
            exit::FAILURE,
        );
    }
    super::change(
        ToMaster::ModifyObject {
            kind: ObjectKind::ShareTree,
            text: edited,
        },
        true,
    )
}
