//! A small XML writer for `-xml` output in Grid Engine's layout (single-quoted
//! attributes, its indentation). Every text and attribute value goes through
//! [`escape`]; nothing is ever spliced into markup unescaped.

pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\'' => out.push_str("&apos;"),
            '"' => out.push_str("&quot;"),
            c => out.push(c),
        }
    }
    out
}

#[derive(Default)]
pub struct Xml {
    out: String,
}

impl Xml {
    pub fn new() -> Self {
        Xml {
            out: String::from("<?xml version='1.0'?>\n"),
        }
    }

    fn attrs(attrs: &[(&str, &str)]) -> String {
        attrs
            .iter()
            .map(|(k, v)| format!(" {k}='{}'", escape(v)))
            .collect()
    }

    /// `<name attrs>` on its own line.
    pub fn open(&mut self, indent: usize, name: &str, attrs: &[(&str, &str)]) {
        self.out
            .push_str(&format!("{:indent$}<{name}{}>\n", "", Self::attrs(attrs)));
    }

    /// An opening tag whose attributes are written verbatim (a namespace declaration).
    pub fn open_raw(&mut self, indent: usize, name: &str, raw_attrs: &str) {
        self.out
            .push_str(&format!("{:indent$}<{name} {raw_attrs}>\n", ""));
    }

    pub fn close(&mut self, indent: usize, name: &str) {
        self.out.push_str(&format!("{:indent$}</{name}>\n", ""));
    }

    /// `<name attrs>text</name>` on one line.
    pub fn element(&mut self, indent: usize, name: &str, attrs: &[(&str, &str)], text: &str) {
        self.out.push_str(&format!(
            "{:indent$}<{name}{}>{}</{name}>\n",
            "",
            Self::attrs(attrs),
            escape(text)
        ));
    }

    /// `<name attrs/>` on its own line.
    pub fn empty(&mut self, indent: usize, name: &str, attrs: &[(&str, &str)]) {
        self.out
            .push_str(&format!("{:indent$}<{name}{}/>\n", "", Self::attrs(attrs)));
    }

    pub fn finish(self) -> String {
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn everything_is_escaped() {
        assert_eq!(escape("a<b>&'\""), "a&lt;b&gt;&amp;&apos;&quot;");
        let mut x = Xml::new();
        x.element(1, "v", &[("name", "x'><evil/>")], "</v><evil/>");
        let out = x.finish();
        assert!(!out.contains("<evil/>"), "{out}");
        assert!(out.contains("<v name='x&apos;&gt;&lt;evil/&gt;'>&lt;/v&gt;&lt;evil/&gt;</v>"));
        let mut x = Xml::new();
        x.empty(2, "limit", &[("resource", "a'/><evil")]);
        assert_eq!(
            x.finish(),
            "<?xml version='1.0'?>\n  <limit resource='a&apos;/&gt;&lt;evil'/>\n"
        );
    }
}
