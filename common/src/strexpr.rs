//! String requests as SGE 8.1.9 matches them: a request on any string type (STRING,
//! CSTRING, RESTRING, HOST) is an expression, as `sge_types(1)` defines it.
//!
//! ```text
//! expression := and ( '|' and )*
//! and        := term ( '&' term )*
//! term       := '!' term | '(' expression ')' | pattern
//! ```
//!
//! A pattern is a run of characters other than `! | & ( )` and blanks (blanks between
//! tokens are skipped). A pattern with `*`, `?`, `[` or `]` matches as a shell wildcard
//! (`*` any run, also empty; `?` one character; `[a-z]`, `[^a-z]` one character of a set;
//! `\` escapes the next character); one without is compared whole. STRING and RESTRING
//! compare case-sensitively, CSTRING and HOST caselessly.
//!
//! A request with none of `* ? [ ] & | ! ( )` is no expression at all and is compared
//! whole, as SGE does (so `a b` is a plain value, not a syntax error). The complex
//! specification, written for SGE 6.0, matches plain strings exactly; SGE 8.1.9 and
//! Gantry match every string type as an expression (`-l arch=lx*`).

use gantry_proto::ValueType;

/// A request that is no well-formed expression, in SGE's words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Parse error on position {position} of the expression \"{expression}\".")]
pub struct ExprError {
    /// Where the parse failed: the offset just after the token it could not take.
    pub position: usize,
    pub expression: String,
}

/// Does the string use any of the expression characters?
pub fn is_expression(s: &str) -> bool {
    s.bytes().any(|b| {
        matches!(
            b,
            b'*' | b'?' | b'[' | b']' | b'&' | b'|' | b'!' | b'(' | b')'
        )
    })
}

/// Is `expr` a well-formed expression (or no expression at all)?
pub fn check(expr: &str) -> Result<(), ExprError> {
    matches(ValueType::String, expr, "").map(|_| ())
}

/// Does `value` satisfy the request `expr` of type `ty`?
pub fn matches(ty: ValueType, expr: &str, value: &str) -> Result<bool, ExprError> {
    let fold = matches!(ty, ValueType::Cstring | ValueType::Host);
    if !is_expression(expr) {
        return Ok(if fold {
            expr.eq_ignore_ascii_case(value)
        } else {
            expr == value
        });
    }
    let mut p = Parser {
        expr: expr.as_bytes(),
        at: 0,
        value: value.as_bytes(),
        fold,
    };
    let result = p.or(true)?;
    if p.peek().is_some() {
        // Something after a complete expression: SGE names the offset after it.
        p.take_token();
        return Err(p.error());
    }
    Ok(result)
}

struct Parser<'a> {
    expr: &'a [u8],
    at: usize,
    value: &'a [u8],
    fold: bool,
}

fn is_operator(b: u8) -> bool {
    matches!(b, b'!' | b'|' | b'&' | b'(' | b')' | b' ' | b'\t')
}

impl Parser<'_> {
    fn error(&self) -> ExprError {
        ExprError {
            position: self.at.min(self.expr.len()),
            expression: String::from_utf8_lossy(self.expr).into_owned(),
        }
    }

    /// Step over the next token (an operator, or a pattern whole), to report an error
    /// after it as SGE does.
    fn take_token(&mut self) {
        match self.expr.get(self.at) {
            Some(b) if is_operator(*b) => self.at += 1,
            Some(_) => {
                while self.expr.get(self.at).is_some_and(|b| !is_operator(*b)) {
                    self.at += 1;
                }
            }
            None => {}
        }
    }

    fn skip_blanks(&mut self) {
        while self
            .expr
            .get(self.at)
            .is_some_and(|b| *b == b' ' || *b == b'\t')
        {
            self.at += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_blanks();
        self.expr.get(self.at).copied()
    }

    /// `and ('|' and)*`; with `eval` false the parse only checks the syntax (the
    /// other side of a decided `|` or `&`).
    fn or(&mut self, eval: bool) -> Result<bool, ExprError> {
        let mut result = self.and(eval)?;
        while self.peek() == Some(b'|') {
            self.at += 1;
            let right = self.and(eval && !result)?;
            result = result || (eval && right);
        }
        Ok(result)
    }

    fn and(&mut self, eval: bool) -> Result<bool, ExprError> {
        let mut result = self.term(eval)?;
        while self.peek() == Some(b'&') {
            self.at += 1;
            let right = self.term(eval && result)?;
            result = result && right;
        }
        Ok(result)
    }

    fn term(&mut self, eval: bool) -> Result<bool, ExprError> {
        match self.peek() {
            Some(b'!') => {
                self.at += 1;
                Ok(!self.term(eval)?)
            }
            Some(b'(') => {
                self.at += 1;
                let inner = self.or(eval)?;
                if self.peek() != Some(b')') {
                    self.take_token();
                    return Err(self.error());
                }
                self.at += 1;
                Ok(inner)
            }
            Some(b) if !is_operator(b) => {
                let start = self.at;
                while self.expr.get(self.at).is_some_and(|b| !is_operator(*b)) {
                    self.at += 1;
                }
                let pattern = &self.expr[start..self.at];
                Ok(eval && self.pattern_matches(pattern))
            }
            // An operator where a term belongs, or the end.
            Some(_) => {
                self.at += 1;
                Err(self.error())
            }
            None => Err(self.error()),
        }
    }

    fn pattern_matches(&self, pattern: &[u8]) -> bool {
        let wild = pattern
            .iter()
            .any(|b| matches!(b, b'*' | b'?' | b'[' | b']'));
        if wild {
            wildcard(pattern, self.value, self.fold)
        } else if self.fold {
            pattern.eq_ignore_ascii_case(self.value)
        } else {
            pattern == self.value
        }
    }
}

fn same(a: u8, b: u8, fold: bool) -> bool {
    if fold {
        a.eq_ignore_ascii_case(&b)
    } else {
        a == b
    }
}

/// One character of a set at the start of `p` (`[abc]`, `[a-z0-9]`, `[^x]`; a `]` first
/// in the set is one of its characters): (the set's length, whether `c` is in it), or
/// none when the `[` has no `]` (then it stands for itself).
fn in_set(p: &[u8], c: u8, fold: bool) -> Option<(usize, bool)> {
    let mut i = 1;
    let negated = matches!(p.get(i), Some(b'^'));
    if negated {
        i += 1;
    }
    let first = i;
    let mut hit = false;
    loop {
        let b = *p.get(i)?;
        if b == b']' && i > first {
            return Some((i + 1, hit != negated));
        }
        if p.get(i + 1) == Some(&b'-') && p.get(i + 2).is_some_and(|e| *e != b']') {
            let (lo, hi) = (b, p[i + 2]);
            hit |= (lo..=hi).contains(&c)
                || (fold
                    && ((lo..=hi).contains(&c.to_ascii_lowercase())
                        || (lo..=hi).contains(&c.to_ascii_uppercase())));
            i += 3;
        } else {
            hit |= same(b, c, fold);
            i += 1;
        }
    }
}

/// A shell wildcard against a whole value, backtracking to the last `*`.
fn wildcard(p: &[u8], t: &[u8], fold: bool) -> bool {
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        let step = match p.get(pi) {
            Some(b'*') => {
                star = Some((pi, ti));
                pi += 1;
                continue;
            }
            Some(b'?') => Some(1),
            Some(b'\\') if pi + 1 < p.len() => same(p[pi + 1], t[ti], fold).then_some(2),
            Some(b'[') => match in_set(&p[pi..], t[ti], fold) {
                Some((len, hit)) => hit.then_some(len),
                None => (t[ti] == b'[').then_some(1),
            },
            Some(&c) => same(c, t[ti], fold).then_some(1),
            None => None,
        };
        match step {
            Some(n) => {
                pi += n;
                ti += 1;
            }
            None => match star {
                Some((sp, st)) => {
                    pi = sp + 1;
                    ti = st + 1;
                    star = Some((sp, st + 1));
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|&c| c == b'*')
}

#[cfg(test)]
mod tests;
