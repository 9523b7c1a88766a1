//! Arithmetic formulas of the scheduler configuration's group quota settings:
//! `group_slot_weight` (`slots*h_vmem/4G`) and `group_sort` (`usage/quota`). Numbers
//! (with SGE's memory multipliers k K m M g G t T), names, `+ - * /`, unary minus and
//! parentheses; the usual precedence, left to right.

use crate::value::parse_memory;

/// A parsed formula.
#[derive(Debug, Clone, PartialEq)]
pub enum Formula {
    Number(f64),
    Name(String),
    Negate(Box<Formula>),
    /// The operator (`+ - * /`) and its operands.
    Apply(char, Box<Formula>, Box<Formula>),
}

impl Formula {
    /// Parse `text`; `known` says which names the formula may use.
    pub fn parse(text: &str, known: impl Fn(&str) -> bool) -> Result<Formula, String> {
        let tokens = tokenize(text).ok_or_else(|| format!("invalid formula \"{text}\""))?;
        let mut p = Parser { tokens, at: 0 };
        let f = p
            .sum()
            .ok_or_else(|| format!("invalid formula \"{text}\""))?;
        if p.at != p.tokens.len() {
            return Err(format!("invalid formula \"{text}\""));
        }
        if let Some(name) = f.names().into_iter().find(|n| !known(n)) {
            return Err(format!("unknown name \"{name}\" in formula \"{text}\""));
        }
        Ok(f)
    }

    /// Its value, `value` giving each name's (a name without one counts 0). Division
    /// by zero gives an infinity or NaN, for the caller to judge.
    pub fn eval(&self, value: &dyn Fn(&str) -> Option<f64>) -> f64 {
        match self {
            Formula::Number(n) => *n,
            Formula::Name(n) => value(n).unwrap_or(0.0),
            Formula::Negate(f) => -f.eval(value),
            Formula::Apply(op, a, b) => {
                let (a, b) = (a.eval(value), b.eval(value));
                match op {
                    '+' => a + b,
                    '-' => a - b,
                    '*' => a * b,
                    _ => a / b,
                }
            }
        }
    }

    /// The names it uses.
    pub fn names(&self) -> Vec<&str> {
        match self {
            Formula::Number(_) => Vec::new(),
            Formula::Name(n) => vec![n.as_str()],
            Formula::Negate(f) => f.names(),
            Formula::Apply(_, a, b) => {
                let mut n = a.names();
                n.extend(b.names());
                n
            }
        }
    }

    /// Is it the single name `name`?
    pub fn is_name(&self, name: &str) -> bool {
        matches!(self, Formula::Name(n) if n == name)
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Number(f64),
    Name(String),
    Op(char),
}

fn tokenize(text: &str) -> Option<Vec<Token>> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
        } else if "+-*/()".contains(c) {
            out.push(Token::Op(c));
            chars.next();
        } else if c.is_ascii_alphanumeric() || c == '_' || c == '.' {
            let mut word = String::new();
            while let Some(&c) = chars.peek() {
                if !(c.is_ascii_alphanumeric() || c == '_' || c == '.') {
                    break;
                }
                word.push(c);
                chars.next();
            }
            if word.starts_with(|c: char| c.is_ascii_digit() || c == '.') {
                out.push(Token::Number(
                    parse_memory(&word).ok().filter(|n| n.is_finite())?,
                ));
            } else {
                out.push(Token::Name(word));
            }
        } else {
            return None;
        }
    }
    Some(out)
}

struct Parser {
    tokens: Vec<Token>,
    at: usize,
}

impl Parser {
    fn op(&mut self, ops: &str) -> Option<char> {
        match self.tokens.get(self.at) {
            Some(Token::Op(c)) if ops.contains(*c) => {
                self.at += 1;
                Some(*c)
            }
            _ => None,
        }
    }

    fn sum(&mut self) -> Option<Formula> {
        let mut f = self.product()?;
        while let Some(op) = self.op("+-") {
            f = Formula::Apply(op, Box::new(f), Box::new(self.product()?));
        }
        Some(f)
    }

    fn product(&mut self) -> Option<Formula> {
        let mut f = self.factor()?;
        while let Some(op) = self.op("*/") {
            f = Formula::Apply(op, Box::new(f), Box::new(self.factor()?));
        }
        Some(f)
    }

    fn factor(&mut self) -> Option<Formula> {
        if self.op("-").is_some() {
            return Some(Formula::Negate(Box::new(self.factor()?)));
        }
        if self.op("(").is_some() {
            let f = self.sum()?;
            self.op(")")?;
            return Some(f);
        }
        let t = self.tokens.get(self.at)?.clone();
        self.at += 1;
        match t {
            Token::Number(n) => Some(Formula::Number(n)),
            Token::Name(n) => Some(Formula::Name(n)),
            Token::Op(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn eval(text: &str, vars: &[(&str, f64)]) -> f64 {
        let f = Formula::parse(text, |_| true).unwrap();
        f.eval(&|n| vars.iter().find(|(k, _)| *k == n).map(|(_, v)| *v))
    }

    #[test]
    fn formulas_evaluate_with_precedence_and_multipliers() {
        type Vars = &'static [(&'static str, f64)];
        let cases: &[(&str, Vars, f64)] = &[
            ("slots", &[("slots", 4.0)], 4.0),
            (
                "slots*h_vmem/4G",
                &[("slots", 2.0), ("h_vmem", 8.0 * 1073741824.0)],
                4.0,
            ),
            ("1+2*3", &[], 7.0),
            ("(1+2)*3", &[], 9.0),
            ("8-2-1", &[], 5.0),
            ("8/2/2", &[], 2.0),
            ("-usage/quota", &[("usage", 3.0), ("quota", 6.0)], -0.5),
            ("2K", &[], 2048.0),
            ("1.5", &[], 1.5),
            ("missing*2+1", &[], 1.0),
        ];
        for (text, vars, want) in cases {
            assert_eq!(eval(text, vars), *want, "{text}");
        }
        assert!(eval("usage/quota", &[("usage", 1.0)]).is_infinite());
    }

    #[test]
    fn bad_formulas_are_refused() {
        for text in ["", "1+", "*2", "(1", "1)", "a b", "2$", "1..2x"] {
            assert_eq!(
                Formula::parse(text, |_| true),
                Err(format!("invalid formula \"{text}\"")),
                "{text}"
            );
        }
        assert_eq!(
            Formula::parse("usage/quotas", |n| n == "usage" || n == "quota"),
            Err("unknown name \"quotas\" in formula \"usage/quotas\"".to_string())
        );
        assert!(Formula::parse("slots", |_| true).unwrap().is_name("slots"));
    }
}
