//! `kurabe cmd`'s list of commands, as hyperfine builds it.
//!
//! Owns hyperfine's parameter expansion — `-L NAME a,b,c` (every
//! combination of several lists), `-P NAME MIN MAX` with `-D STEP` — the
//! command names (`-n`, `{NAME}` filled in), `--reference` (put first),
//! names made unique (the experiment's variants need distinct names), and
//! the run-count bounds (`-r`, `-m`, `-M`). Must not parse command lines
//! (the binary's clap does) or run anything ([`crate::cmd`] does).

use std::collections::BTreeMap;

use kurabe_model::plan::{CommandOutput, Measure};

use crate::cmd::{CmdError, CmdSpec, Runs, Shell};

/// Most values one parameter may take.
const MAX_VALUES: u64 = 100_000;

/// `-P NAME MIN MAX`, with `-D STEP` when given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scan {
    /// The parameter's name.
    pub name: String,
    /// First value, as typed.
    pub min: String,
    /// Last value, as typed.
    pub max: String,
    /// Step (`-D`), as typed; integers step by 1 without it.
    pub step: Option<String>,
}

/// The commands and parameters as the user gave them.
#[derive(Debug, Clone, Default)]
pub struct CommandList {
    /// The commands, in the order given.
    pub commands: Vec<String>,
    /// `-n` names, none or one per command.
    pub names: Vec<String>,
    /// `--reference`: benchmarked first and compared against.
    pub reference: Option<String>,
    /// `-L NAME VALUES` pairs, VALUES comma-separated.
    pub lists: Vec<(String, String)>,
    /// `-P`/`-D`.
    pub scan: Option<Scan>,
}

/// The shell of `--shell SHELL` / `-N` (no shell); `sh` when neither is given.
pub fn shell_flag(shell: Option<&str>, no_shell: bool) -> Result<Shell, CmdError> {
    match (shell, no_shell) {
        (_, true) => Ok(Shell::None),
        (Some(s), false) => Shell::parse(s),
        (None, false) => Ok(Shell::Default),
    }
}

/// Where the commands' output goes: `--output WHERE`, `--show-output`
/// (inherit), else nowhere.
pub fn output_flag(output: Option<&str>, show_output: bool) -> CommandOutput {
    match (output, show_output) {
        (_, true) => CommandOutput::Inherit,
        (Some(o), false) => CommandOutput::parse(o),
        (None, false) => CommandOutput::Null,
    }
}

/// The file every execution reads (`--input FILE`); none for `null`
/// (hyperfine's keyword for no input) or without the flag.
pub fn input_flag(input: Option<&std::path::Path>) -> Option<std::path::PathBuf> {
    input
        .filter(|p| *p != std::path::Path::new("null"))
        .map(|p| p.to_path_buf())
}

fn usage(text: impl Into<String>) -> CmdError {
    CmdError::Usage(text.into())
}

impl CommandList {
    /// The list from hyperfine's flags as clap collects them: `-L` as
    /// NAME, VALUES, NAME, VALUES …; `-P` as NAME, MIN, MAX (or empty) with
    /// `-D`'s step.
    pub fn from_flags(
        commands: Vec<String>,
        names: Vec<String>,
        reference: Option<String>,
        lists: &[String],
        scan: &[String],
        step: Option<String>,
    ) -> CommandList {
        let scan = match scan {
            [name, min, max] => Some(Scan {
                name: name.clone(),
                min: min.clone(),
                max: max.clone(),
                step,
            }),
            _ => None,
        };
        CommandList {
            commands,
            names,
            reference,
            lists: lists
                .chunks_exact(2)
                .map(|p| (p[0].clone(), p[1].clone()))
                .collect(),
            scan,
        }
    }

    /// Every command once per combination of parameter values
    /// (hyperfine's order: combinations outside, commands inside), `-n`
    /// names applied, the reference first, names unique. The reference is
    /// index 0.
    pub fn expand(&self) -> Result<Vec<CmdSpec>, CmdError> {
        if !self.names.is_empty() && self.names.len() != self.commands.len() {
            return Err(usage(format!(
                "-n/--command-name was given {} times for {} commands; name every command or none",
                self.names.len(),
                self.commands.len()
            )));
        }
        let mut out: Vec<CmdSpec> = self.reference.iter().map(|r| plain(r)).collect();
        for params in &self.combinations()? {
            for (i, c) in self.commands.iter().enumerate() {
                let command = kurabe_model::plan::substitute(c, params);
                let name = match self.names.get(i) {
                    Some(n) => kurabe_model::plan::substitute(n, params),
                    None => command.clone(),
                };
                out.push(CmdSpec {
                    name,
                    command,
                    parameters: params.clone(),
                });
            }
        }
        unique_names(&mut out);
        Ok(out)
    }

    /// The parameter value sets of -L (cartesian product) and -P/-D.
    fn combinations(&self) -> Result<Vec<BTreeMap<String, String>>, CmdError> {
        let mut lists: Vec<(&str, Vec<String>)> = Vec::new();
        for (name, values) in &self.lists {
            if lists.iter().any(|(n, _)| n == name) {
                return Err(usage(format!(
                    "-L {name} is given twice; give each parameter once with all its values"
                )));
            }
            lists.push((name, values.split(',').map(str::to_owned).collect()));
        }
        if let Some(s) = &self.scan {
            lists.push((&s.name, s.values()?));
        }
        let mut combos = vec![BTreeMap::new()];
        for (name, values) in &lists {
            combos = combos
                .iter()
                .flat_map(|c| {
                    values.iter().map(move |v| {
                        let mut c = c.clone();
                        c.insert(name.to_string(), v.clone());
                        c
                    })
                })
                .collect();
        }
        Ok(combos)
    }
}

/// A command named by itself, without parameters.
fn plain(command: &str) -> CmdSpec {
    CmdSpec {
        name: command.to_owned(),
        command: command.to_owned(),
        parameters: BTreeMap::new(),
    }
}

/// A finite number from `s`, or a usage error naming `what`.
fn number(s: &str, what: &str) -> Result<f64, CmdError> {
    s.trim()
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
        .ok_or_else(|| usage(format!("-P: {what} `{s}` is not a number")))
}

impl Scan {
    /// MIN, MIN+step … MAX: integers without -D, decimals with it (as many
    /// decimals as MIN or the step has).
    pub fn values(&self) -> Result<Vec<String>, CmdError> {
        let (lo, hi) = (number(&self.min, "MIN")?, number(&self.max, "MAX")?);
        if hi < lo {
            return Err(usage(format!(
                "-P: MAX ({}) is below MIN ({}); swap them",
                self.max, self.min
            )));
        }
        match &self.step {
            None => self.integers(),
            Some(step) => self.decimals(lo, hi, step),
        }
    }

    fn integers(&self) -> Result<Vec<String>, CmdError> {
        let (Ok(a), Ok(b)) = (
            self.min.trim().parse::<i64>(),
            self.max.trim().parse::<i64>(),
        ) else {
            return Err(usage(
                "-P: MIN and MAX must be integers without -D (give a step, e.g. -D 0.1)",
            ));
        };
        if (b - a) as u64 >= MAX_VALUES {
            return Err(usage(format!(
                "-P: {} values is too many; narrow the range",
                b - a + 1
            )));
        }
        Ok((a..=b).map(|v| v.to_string()).collect())
    }

    fn decimals(&self, lo: f64, hi: f64, step: &str) -> Result<Vec<String>, CmdError> {
        let d = number(step, "DELTA")?;
        if d <= 0.0 {
            return Err(usage(format!("-D: the step must be above 0, got `{step}`")));
        }
        let count = ((hi - lo) / d + 1e-9).floor() as u64 + 1;
        if count > MAX_VALUES {
            return Err(usage(format!(
                "-P/-D: {count} values is too many; widen the step"
            )));
        }
        let decimals = [&self.min, step]
            .iter()
            .map(|s| s.trim().split_once('.').map_or(0, |(_, f)| f.len()))
            .max()
            .unwrap_or(0);
        Ok((0..count)
            .map(|i| format!("{:.*}", decimals, lo + i as f64 * d))
            .collect())
    }
}

/// Variant names must differ: a repeated name gets its parameters, then a number.
fn unique_names(commands: &mut [CmdSpec]) {
    let repeated: Vec<bool> = commands
        .iter()
        .map(|c| commands.iter().filter(|o| o.name == c.name).count() > 1)
        .collect();
    for (c, repeated) in commands.iter_mut().zip(repeated) {
        if repeated && !c.parameters.is_empty() {
            let p: Vec<String> = c
                .parameters
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            c.name = format!("{} ({})", c.name, p.join(", "));
        }
    }
    for i in 0..commands.len() {
        let name = commands[i].name.clone();
        if commands[..i].iter().any(|c| c.name == name) {
            commands[i].name = format!("{name} #{}", i + 1);
        }
    }
}

impl Runs {
    /// hyperfine's `-r`, else `-m` (default: [`super::default_min_runs`]
    /// of what is `measure`d) and `-M`.
    pub fn from_flags(
        runs: Option<u32>,
        (min, max): (Option<u32>, Option<u32>),
        measure: Measure,
    ) -> Result<Runs, CmdError> {
        if let Some(n) = runs {
            return Ok(Runs::Exact(n));
        }
        let min = min.unwrap_or(super::default_min_runs(measure));
        if max.is_some_and(|max| max < min) {
            return Err(usage(format!(
                "--max-runs is below --min-runs ({min}); raise it"
            )));
        }
        Ok(Runs::Auto { min, max })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(min: &str, max: &str, step: Option<&str>) -> Result<Vec<String>, CmdError> {
        Scan {
            name: "x".into(),
            min: min.into(),
            max: max.into(),
            step: step.map(Into::into),
        }
        .values()
    }

    #[test]
    fn scans_follow_hyperfine() {
        assert_eq!(scan("1", "3", None).unwrap(), vec!["1", "2", "3"]);
        assert_eq!(
            scan("0.3", "0.7", Some("0.2")).unwrap(),
            vec!["0.3", "0.5", "0.7"]
        );
        assert!(scan("0.5", "1", None).is_err());
        assert!(scan("3", "1", None).is_err());
        assert!(scan("1", "2", Some("0")).is_err());
    }

    #[test]
    fn repeated_names_become_unique() {
        let spec = |name: &str, p: &[(&str, &str)]| CmdSpec {
            name: name.into(),
            command: name.into(),
            parameters: p
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        };
        let mut cs = vec![
            spec("true", &[("x", "1")]),
            spec("true", &[("x", "2")]),
            spec("a", &[]),
            spec("a", &[]),
        ];
        unique_names(&mut cs);
        let names: Vec<&str> = cs.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, vec!["true (x=1)", "true (x=2)", "a", "a #4"]);
    }

    #[test]
    fn lists_combine_commands_inside_and_the_reference_comes_first() {
        let l = CommandList {
            commands: vec!["a {n}".into(), "b {n}".into()],
            names: vec!["A{n}".into(), "B{n}".into()],
            reference: Some("ref".into()),
            lists: vec![("n".into(), "1,2".into())],
            scan: None,
        };
        let names: Vec<String> = l.expand().unwrap().into_iter().map(|c| c.name).collect();
        assert_eq!(names, vec!["ref", "A1", "B1", "A2", "B2"]);
        let twice = CommandList {
            lists: vec![("n".into(), "1".into()), ("n".into(), "2".into())],
            ..l.clone()
        };
        assert!(twice.expand().is_err());
        let one_name = CommandList {
            names: vec!["A".into()],
            ..l
        };
        assert!(one_name.expand().is_err());
    }

    #[test]
    fn run_bounds_follow_hyperfine() {
        assert_eq!(
            Runs::from_flags(Some(5), (None, None), Measure::Time).unwrap(),
            Runs::Exact(5)
        );
        assert_eq!(
            Runs::from_flags(None, (None, Some(20)), Measure::Time).unwrap(),
            Runs::Auto {
                min: 10,
                max: Some(20)
            }
        );
        assert!(Runs::from_flags(None, (Some(10), Some(5)), Measure::Time).is_err());
        // Counting instructions: 3 runs unless told (each is ~50× slower).
        assert_eq!(
            Runs::from_flags(None, (None, None), Measure::Instructions).unwrap(),
            Runs::Auto { min: 3, max: None }
        );
    }
}
