//! Core binding (`qsub -binding`, SGE 8.1.9): the request's syntax and SGE's way of
//! printing it, and the choice of cores on a host, which the execd makes when a task
//! starts. Pure: the host's topology and the cores its other tasks hold come in.
//!
//! `[set|env|pe] linear:N[:S,C] | striding:N:STEP[:S,C] | explicit:S,C[:S,C...]`:
//! `set` (the default) binds the job's processes to the cores' processors, `env` only
//! tells the job which (`SGE_BINDING`), `pe` writes them into the `pe_hostfile`. Sockets
//! and cores are counted from 0 in the host's order.

use std::collections::BTreeSet;

/// What the execd does with the cores it chose: `set` (the task's affinity), `env`
/// (`SGE_BINDING` only) or `pe` (the `pe_hostfile` only), written so in the shepherd's
/// order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BindingType {
    Set,
    Env,
    Pe,
}

/// Which cores.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Strategy {
    /// `amount` successive cores, from `start` (socket, core) or the first free run.
    Linear {
        amount: u32,
        start: Option<(u32, u32)>,
    },
    /// `amount` cores `step` apart, from `start` or the first place that has them free.
    Striding {
        amount: u32,
        step: u32,
        start: Option<(u32, u32)>,
    },
    /// These (socket, core) pairs.
    Explicit(Vec<(u32, u32)>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binding {
    pub kind: BindingType,
    pub strategy: Strategy,
}

fn socket_core(text: &str) -> Option<(u32, u32)> {
    let (s, c) = text.split_once(',')?;
    Some((s.parse().ok()?, c.parse().ok()?))
}

/// Read a `-binding` argument (its optional type and its strategy, joined by a space),
/// with SGE's reasons (`ERROR! -binding option contains errors: <reason>`).
pub fn parse(text: &str) -> Result<Binding, String> {
    let wrap = |reason: &str| format!("ERROR! -binding option contains errors: {reason}");
    let (kind, strategy) = match text.split_once(' ') {
        Some(("set", s)) => (BindingType::Set, s),
        Some(("env", s)) => (BindingType::Env, s),
        Some(("pe", s)) => (BindingType::Pe, s),
        Some(_) => return Err(wrap("couldn't parse binding parameter (no strategy found)")),
        None => (BindingType::Set, text),
    };
    let parts: Vec<&str> = strategy.split(':').collect();
    let number = |s: Option<&&str>| s.and_then(|s| s.parse::<u32>().ok());
    let strategy = match parts.first().copied() {
        Some("linear") => {
            let amount = number(parts.get(1))
                .filter(|&n| n > 0)
                .ok_or_else(|| wrap("couldn't parse amount (linear)"))?;
            let start = match parts.get(2) {
                None if parts.len() == 2 => None,
                Some(sc) if parts.len() == 3 => Some(
                    socket_core(sc).ok_or_else(|| wrap("couldn't parse socket number (linear)"))?,
                ),
                _ => return Err(wrap("couldn't parse socket number (linear)")),
            };
            Strategy::Linear { amount, start }
        }
        Some("striding") => {
            let amount = number(parts.get(1))
                .filter(|&n| n > 0)
                .ok_or_else(|| wrap("couldn't parse amount (striding)"))?;
            let step = number(parts.get(2))
                .filter(|&n| n > 0)
                .ok_or_else(|| wrap("couldn't parse stepsize (striding)"))?;
            let start = match parts.get(3) {
                None if parts.len() == 3 => None,
                Some(sc) if parts.len() == 4 => Some(
                    socket_core(sc)
                        .ok_or_else(|| wrap("couldn't parse socket number (striding)"))?,
                ),
                _ => return Err(wrap("couldn't parse socket number (striding)")),
            };
            Strategy::Striding {
                amount,
                step,
                start,
            }
        }
        Some("explicit") => {
            let pairs: Option<Vec<(u32, u32)>> =
                parts[1..].iter().map(|p| socket_core(p)).collect();
            match pairs {
                Some(p) if !p.is_empty() => {
                    let distinct: BTreeSet<&(u32, u32)> = p.iter().collect();
                    if distinct.len() != p.len() {
                        return Err(wrap("explicit: a socket,core pair is given twice"));
                    }
                    Strategy::Explicit(p)
                }
                _ => return Err(wrap("explicit: expected socket,core pairs")),
            }
        }
        _ => return Err(wrap("couldn't parse binding parameter (no strategy found)")),
    };
    Ok(Binding { kind, strategy })
}

/// The request as SGE's JSV protocol gives it (`binding_strategy`, `binding_type`,
/// `binding_amount`, `binding_step`, `binding_socket`, `binding_core`, `binding_exp_n`,
/// `binding_exp_socket<i>`, `binding_exp_core<i>`), in SGE's order.
pub fn jsv_parameters(b: &Binding) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut put = |k: &str, v: String| out.push((k.to_string(), v));
    let (strategy, amount, step, start) = match &b.strategy {
        Strategy::Linear { amount, start } => ("linear", Some(*amount), None, *start),
        Strategy::Striding {
            amount,
            step,
            start,
        } => ("striding", Some(*amount), Some(*step), *start),
        Strategy::Explicit(_) => ("explicit", None, None, None),
    };
    put("binding_strategy", strategy.to_string());
    put(
        "binding_type",
        match b.kind {
            BindingType::Set => "set",
            BindingType::Env => "env",
            BindingType::Pe => "pe",
        }
        .to_string(),
    );
    if let Some(n) = amount {
        put("binding_amount", n.to_string());
    }
    if let Some((socket, core)) = start {
        put("binding_socket", socket.to_string());
        put("binding_core", core.to_string());
    }
    if let Some(n) = step {
        put("binding_step", n.to_string());
    }
    if let Strategy::Explicit(pairs) = &b.strategy {
        put("binding_exp_n", pairs.len().to_string());
        for (i, (socket, core)) in pairs.iter().enumerate() {
            put(&format!("binding_exp_socket{i}"), socket.to_string());
            put(&format!("binding_exp_core{i}"), core.to_string());
        }
    }
    out
}

/// A binding parameter or value a JSV may not give.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("not a binding parameter and value SGE takes")]
pub struct BadJsvParameter;

/// A JSV's `PARAM binding_<name> [value]` applied to the request (`None`: no binding).
/// Parameters come one by one, so each leaves a whole request: a new strategy keeps the
/// amount and step it can, a start (`binding_socket`, `binding_core`) or an explicit
/// pair set half is 0 in its other half; a request that had no binding starts from
/// `set linear:1`. `Err` for a parameter or value SGE does not take.
pub fn set_jsv_parameter(
    current: Option<Binding>,
    name: &str,
    value: Option<&str>,
) -> Result<Option<Binding>, BadJsvParameter> {
    let number = || -> Result<u32, BadJsvParameter> {
        value
            .ok_or(BadJsvParameter)?
            .trim()
            .parse()
            .map_err(|_| BadJsvParameter)
    };
    if name == "binding_strategy" && value.is_none() {
        return Ok(None);
    }
    let mut b = current.unwrap_or(Binding {
        kind: BindingType::Set,
        strategy: Strategy::Linear {
            amount: 1,
            start: None,
        },
    });
    let (amount, step, start) = match &b.strategy {
        Strategy::Linear { amount, start } => (*amount, 1, *start),
        Strategy::Striding {
            amount,
            step,
            start,
        } => (*amount, *step, *start),
        Strategy::Explicit(p) => (p.len() as u32, 1, None),
    };
    match name {
        "binding_strategy" => {
            b.strategy = match value.unwrap_or_default() {
                "linear" | "linear_automatic" => Strategy::Linear { amount, start },
                "striding" | "striding_automatic" => Strategy::Striding {
                    amount,
                    step,
                    start,
                },
                "explicit" => match &b.strategy {
                    Strategy::Explicit(p) => Strategy::Explicit(p.clone()),
                    _ => Strategy::Explicit(vec![(0, 0)]),
                },
                _ => return Err(BadJsvParameter),
            }
        }
        "binding_type" => {
            b.kind = match value.unwrap_or_default() {
                "set" => BindingType::Set,
                "env" => BindingType::Env,
                "pe" => BindingType::Pe,
                _ => return Err(BadJsvParameter),
            }
        }
        "binding_amount" | "binding_step" | "binding_socket" | "binding_core" => {
            let n = number()?;
            match (&mut b.strategy, name) {
                (
                    Strategy::Linear { amount, .. } | Strategy::Striding { amount, .. },
                    "binding_amount",
                ) if n > 0 => *amount = n,
                (Strategy::Striding { step, .. }, "binding_step") if n > 0 => *step = n,
                (
                    Strategy::Linear { start, .. } | Strategy::Striding { start, .. },
                    "binding_socket" | "binding_core",
                ) => {
                    let (s, c) = start.unwrap_or((0, 0));
                    *start = Some(if name == "binding_socket" {
                        (n, c)
                    } else {
                        (s, n)
                    });
                }
                _ => return Err(BadJsvParameter),
            }
        }
        _ => {
            let Strategy::Explicit(pairs) = &mut b.strategy else {
                return Err(BadJsvParameter);
            };
            let n = number()?;
            if name == "binding_exp_n" {
                if n == 0 {
                    return Err(BadJsvParameter);
                }
                pairs.resize(n as usize, (0, 0));
            } else {
                let (index, socket) = if let Some(i) = name.strip_prefix("binding_exp_socket") {
                    (i, true)
                } else if let Some(i) = name.strip_prefix("binding_exp_core") {
                    (i, false)
                } else {
                    return Err(BadJsvParameter);
                };
                let i: usize = index.parse().map_err(|_| BadJsvParameter)?;
                if i >= pairs.len() {
                    pairs.resize(i + 1, (0, 0));
                }
                if socket {
                    pairs[i].0 = n;
                } else {
                    pairs[i].1 = n;
                }
            }
        }
    }
    Ok(Some(b))
}

/// The request as SGE prints it (`qstat -j`'s `binding:`): `set linear:2`,
/// `set linear:2:0,1`, `env striding:2:2`, `pe explicit:0,0:1,0`.
pub fn print(b: &Binding) -> String {
    let kind = match b.kind {
        BindingType::Set => "set",
        BindingType::Env => "env",
        BindingType::Pe => "pe",
    };
    let strategy = match &b.strategy {
        Strategy::Linear {
            amount,
            start: None,
        } => format!("linear:{amount}"),
        Strategy::Linear {
            amount,
            start: Some((s, c)),
        } => format!("linear:{amount}:{s},{c}"),
        Strategy::Striding {
            amount,
            step,
            start: None,
        } => format!("striding:{amount}:{step}"),
        Strategy::Striding {
            amount,
            step,
            start: Some((s, c)),
        } => format!("striding:{amount}:{step}:{s},{c}"),
        Strategy::Explicit(pairs) => {
            let list: Vec<String> = pairs.iter().map(|(s, c)| format!("{s},{c}")).collect();
            format!("explicit:{}", list.join(":"))
        }
    };
    format!("{kind} {strategy}")
}

/// A host's processors: per socket, per core, the processor (CPU) ids of its threads.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Topology {
    pub sockets: Vec<Vec<Vec<u32>>>,
}

impl Topology {
    /// Every core as (socket, core), in the host's order.
    pub fn cores(&self) -> Vec<(u32, u32)> {
        let mut out = Vec::new();
        for (s, cores) in self.sockets.iter().enumerate() {
            for c in 0..cores.len() {
                out.push((s as u32, c as u32));
            }
        }
        out
    }

    /// The processors of these cores.
    pub fn processors(&self, cores: &[(u32, u32)]) -> Vec<u32> {
        let mut out: Vec<u32> = cores
            .iter()
            .filter_map(|&(s, c)| self.sockets.get(s as usize)?.get(c as usize))
            .flatten()
            .copied()
            .collect();
        out.sort_unstable();
        out
    }

    /// SGE's `m_topology`: `S` per socket, `C` per core, `T` per thread when a core has
    /// more than one (`SCCSCC`, `SCTTCTT`); with `in_use`, the cores taken in lower case
    /// (`m_topology_inuse`).
    pub fn text(&self, in_use: &BTreeSet<(u32, u32)>) -> String {
        let mut out = String::new();
        for (s, cores) in self.sockets.iter().enumerate() {
            out.push('S');
            for (c, threads) in cores.iter().enumerate() {
                let used = in_use.contains(&(s as u32, c as u32));
                out.push(if used { 'c' } else { 'C' });
                if threads.len() > 1 {
                    for _ in threads {
                        out.push(if used { 't' } else { 'T' });
                    }
                }
            }
        }
        out
    }
}

/// The cores a task gets on a host where `in_use` are taken by other tasks: None when
/// the request cannot be met there now (the task then runs unbound, as in SGE).
pub fn choose(
    topology: &Topology,
    in_use: &BTreeSet<(u32, u32)>,
    strategy: &Strategy,
) -> Option<Vec<(u32, u32)>> {
    let all = topology.cores();
    let free = |sc: &(u32, u32)| !in_use.contains(sc);
    // `amount` cores `step` apart from position `from` in the host's order, all free.
    let run = |from: usize, amount: u32, step: u32| -> Option<Vec<(u32, u32)>> {
        let picked: Vec<(u32, u32)> = (0..amount as usize)
            .map(|k| all.get(from + k * step as usize).copied())
            .collect::<Option<_>>()?;
        picked.iter().all(free).then_some(picked)
    };
    let position = |sc: (u32, u32)| all.iter().position(|&x| x == sc);
    match strategy {
        Strategy::Linear { amount, start } => match start {
            Some(sc) => run(position(*sc)?, *amount, 1),
            None => (0..all.len()).find_map(|p| run(p, *amount, 1)),
        },
        Strategy::Striding {
            amount,
            step,
            start,
        } => match start {
            Some(sc) => run(position(*sc)?, *amount, *step),
            None => (0..all.len()).find_map(|p| run(p, *amount, *step)),
        },
        Strategy::Explicit(pairs) => {
            let ok = pairs.iter().all(|sc| all.contains(sc) && free(sc));
            ok.then(|| pairs.clone())
        }
    }
}

#[cfg(test)]
mod tests;
