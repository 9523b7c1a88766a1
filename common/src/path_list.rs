//! SGE's path lists (`qsub -o/-e/-i/-S [[host]:]path[,[host:]path...]`): a path for
//! each execution host that needs its own, and at most one for every other host. A job
//! keeps the list as given; its execd takes the path meant for it.

/// Why a path list is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathListError {
    /// An empty element (`,`, `/a,`): the command line's error.
    #[error("empty element")]
    Format,
    /// `host:` with nothing after it (SGE's words).
    #[error("paths may not be empty strings")]
    EmptyPath,
    /// Two paths for one host, or two without one (SGE's words).
    #[error("ERROR! two files are specified for the same host")]
    SameHost,
}

/// One element: the host it is for (None: every host without its own) and the path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathFor<'a> {
    pub host: Option<&'a str>,
    pub path: &'a str,
}

/// The elements of a list, as SGE reads them: a host before the first `:` (an empty
/// one is none).
pub fn parse(text: &str) -> Result<Vec<PathFor<'_>>, PathListError> {
    let mut out: Vec<PathFor> = Vec::new();
    for element in text.split(',') {
        if element.is_empty() {
            return Err(PathListError::Format);
        }
        let (host, path) = match element.split_once(':') {
            Some((h, p)) => ((!h.is_empty()).then_some(h), p),
            None => (None, element),
        };
        if path.is_empty() {
            return Err(PathListError::EmptyPath);
        }
        // One path per host: a name in any case is the same host.
        let same = |a: Option<&str>, b: Option<&str>| match (a, b) {
            (Some(a), Some(b)) => a.eq_ignore_ascii_case(b),
            (a, b) => a == b,
        };
        if out.iter().any(|e| same(e.host, host)) {
            return Err(PathListError::SameHost);
        }
        out.push(PathFor { host, path });
    }
    Ok(out)
}

/// The path meant for `host` (`same` says whether a name in the list is that host):
/// its own, else the one for every host; None when the list names neither.
pub fn for_host(text: &str, same: impl Fn(&str) -> bool) -> Option<&str> {
    let list = parse(text).ok()?;
    list.iter()
        .find(|e| e.host.is_some_and(&same))
        .or_else(|| list.iter().find(|e| e.host.is_none()))
        .map(|e| e.path)
}

/// The hosts a list names.
pub fn hosts(text: &str) -> Vec<&str> {
    parse(text)
        .map(|l| l.iter().filter_map(|e| e.host).collect())
        .unwrap_or_default()
}

/// As `qstat -j` shows a path list: `host:NONE:path` each (`NONE` for no host), comma
/// separated.
pub fn display(text: &str) -> String {
    display_as(text, |host, path| format!("{host}:NONE:{path}"))
}

/// As `qstat -j` shows a shell list: `host:path` each.
pub fn display_shells(text: &str) -> String {
    display_as(text, |host, path| format!("{host}:{path}"))
}

fn display_as(text: &str, element: impl Fn(&str, &str) -> String) -> String {
    match parse(text) {
        Ok(list) => list
            .iter()
            .map(|e| element(e.host.unwrap_or("NONE"), e.path))
            .collect::<Vec<_>>()
            .join(","),
        Err(_) => element("NONE", text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_read_as_sges() {
        let one = |h: Option<&'static str>, p: &'static str| PathFor { host: h, path: p };
        let table: &[(&str, Result<Vec<PathFor>, PathListError>)] = &[
            ("/tmp/out", Ok(vec![one(None, "/tmp/out")])),
            (
                "vm:/tmp/a,/tmp/b",
                Ok(vec![one(Some("vm"), "/tmp/a"), one(None, "/tmp/b")]),
            ),
            (":/x", Ok(vec![one(None, "/x")])),
            ("a:b:c", Ok(vec![one(Some("a"), "b:c")])),
            (",", Err(PathListError::Format)),
            ("/a,", Err(PathListError::Format)),
            ("vm:", Err(PathListError::EmptyPath)),
            ("a,b", Err(PathListError::SameHost)),
            ("vm:/x,vm:/y", Err(PathListError::SameHost)),
        ];
        for (text, want) in table {
            assert_eq!(&parse(text), want, "{text}");
        }
    }

    #[test]
    fn each_host_takes_its_own_path_or_the_common_one() {
        let list = "n1:/one,/all";
        assert_eq!(for_host(list, |h| h == "n1"), Some("/one"));
        assert_eq!(for_host(list, |h| h == "n2"), Some("/all"));
        assert_eq!(for_host("n1:/one", |h| h == "n2"), None);
        assert_eq!(for_host("/plain", |_| false), Some("/plain"));
        assert_eq!(hosts(list), vec!["n1"]);
        assert_eq!(display(list), "n1:NONE:/one,NONE:NONE:/all");
        assert_eq!(display("/x"), "NONE:NONE:/x");
        assert_eq!(
            display_shells("n1:/bin/sh,/bin/bash"),
            "n1:/bin/sh,NONE:/bin/bash"
        );
    }
}
