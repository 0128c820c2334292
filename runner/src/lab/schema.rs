//! The one shape of every experiment's results JSON (described in
//! `docs/results-format.md`): the frame writes the common fields, an experiment
//! describes its contenders with [`Variant`] and its sweeps with [`Sweep`], and
//! [`check`] says whether a file keeps to the shape (the tests run it on every
//! experiment's output; `runner report` and `runner compare` rely on it).

use serde::Serialize;
use serde_json::{json, Map, Value};

/// The version of the shape. 2: `document` is `{file, title}`, every variant has
/// `unit` and `figures`, claims have `where`, `--runs` and `--items` are `runs` and
/// `items` in `config`.
pub const SCHEMA: u64 = 2;

/// A source document, cited by its file name and title.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Document {
    /// Its file name (`002_96b034c3473d5bd0.txt`).
    pub file: &'static str,
    /// Its title, as it stands at its head.
    pub title: &'static str,
}

impl Document {
    /// The number the file name starts with (`002`).
    pub fn number(&self) -> &'static str {
        self.file.split_once('_').map_or(self.file, |(n, _)| n)
    }
}

/// The unit of a figure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Nanoseconds.
    Ns,
    /// TSC ticks.
    Ticks,
    /// Seconds.
    Seconds,
    /// Milliseconds.
    Ms,
    /// Items per second.
    ItemsPerS,
    /// Operations per second.
    OpsPerS,
    /// Bytes.
    Bytes,
    /// Items (a depth, a count of items).
    Items,
    /// A count of events.
    Count,
    /// A ratio of two figures of the same unit.
    Ratio,
}

/// Every unit's word, as written in the JSON.
pub const UNITS: [&str; 10] = [
    "ns", "ticks", "s", "ms", "items/s", "ops/s", "bytes", "items", "count", "ratio",
];

impl Unit {
    /// The word written in the JSON.
    pub fn as_str(self) -> &'static str {
        UNITS[self as usize]
    }
}

/// Which way is better for a figure, so that a comparison can say "faster" or
/// "slower" without knowing the experiment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Better {
    /// Lower is better (a latency, a time, a memory figure).
    Lower,
    /// Higher is better (a rate).
    Higher,
}

/// A number for the JSON: a finite value, or `null`.
fn num(v: f64) -> Value {
    if v.is_finite() {
        json!(v)
    } else {
        Value::Null
    }
}

/// One contender of a run, as it goes into `variants[]`: its name, its figures (each
/// with its unit, which way is better, and its value in each run) and any fields of
/// the experiment's own.
///
/// ```
/// use runner::lab::schema::{Better, Unit, Variant};
/// let mut v = Variant::new("handoff-spsc");
/// v.figure("p50", Unit::Ns, Better::Lower, 120.0, [118.0, 121.0, 120.0]);
/// let v = v.into_value();
/// assert_eq!(v["unit"], "ns");
/// assert_eq!(v["figures"]["p50"]["runs"][1], 121.0);
/// assert!(runner::lab::schema::check_variant(&v).is_ok());
/// ```
#[derive(Clone, Debug)]
pub struct Variant {
    fields: Map<String, Value>,
    figures: Map<String, Value>,
    unit: Option<Unit>,
}

impl Variant {
    /// A contender named `name`, with no figures yet.
    pub fn new(name: &str) -> Variant {
        let mut fields = Map::new();
        fields.insert("name".into(), name.into());
        Variant {
            fields,
            figures: Map::new(),
            unit: None,
        }
    }

    /// A contender that did not run, and why.
    pub fn unavailable(name: &str, why: &str) -> Variant {
        let mut v = Variant::new(name);
        v.set("unavailable", why);
        v
    }

    /// Adds a figure: its median (or single) `value` and its value in each run (empty
    /// when the figure comes from the runs merged). The first figure's unit is the
    /// variant's `unit`.
    pub fn figure(
        &mut self,
        name: &str,
        unit: Unit,
        better: Better,
        value: f64,
        runs: impl IntoIterator<Item = f64>,
    ) -> &mut Variant {
        self.unit.get_or_insert(unit);
        let runs: Vec<Value> = runs.into_iter().map(num).collect();
        self.figures.insert(
            name.into(),
            json!({
                "value": num(value),
                "unit": unit.as_str(),
                "better": match better { Better::Lower => "lower", Better::Higher => "higher" },
                "runs": runs,
            }),
        );
        self
    }

    /// Sets a field of the experiment's own (`mode`, `per_run`, a histogram ...).
    pub fn set(&mut self, key: &str, value: impl Serialize) -> &mut Variant {
        let v = serde_json::to_value(value).unwrap_or(Value::Null);
        self.fields.insert(key.into(), v);
        self
    }

    /// Sets every field of `m`.
    pub fn extend(&mut self, m: Map<String, Value>) -> &mut Variant {
        self.fields.extend(m);
        self
    }

    /// The JSON object: the fields, `unit`, `figures`, and `per_run` (empty unless
    /// set).
    pub fn into_value(mut self) -> Value {
        let unit = self.unit.map_or(Value::Null, |u| u.as_str().into());
        self.fields.insert("unit".into(), unit);
        self.fields
            .insert("figures".into(), Value::Object(self.figures));
        self.fields
            .entry("per_run")
            .or_insert_with(|| Value::Array(Vec::new()));
        Value::Object(self.fields)
    }
}

/// One sweep, as it goes into `sweeps[]`: a variant's figures at each point of a swept
/// parameter.
#[derive(Clone, Debug, Serialize)]
pub struct Sweep {
    /// What was swept (`load`, `background`, `working_set`).
    pub name: &'static str,
    /// The variant.
    pub variant: String,
    /// The swept parameter's key in each point.
    pub x: &'static str,
    /// Its unit.
    pub x_unit: &'static str,
    /// The unit of the points' other figures.
    pub unit: &'static str,
    /// The points, in order: objects with `x` and the figures.
    pub points: Vec<Value>,
}

/// What is wrong with a results JSON, if anything: the first field missing or of the
/// wrong kind, named by its path.
pub fn check(v: &Value) -> Result<(), String> {
    let top = v.as_object().ok_or("not an object")?;
    let field = |k: &str| top.get(k).ok_or_else(|| format!("{k}: missing"));
    if field("schema")?.as_u64() != Some(SCHEMA) {
        return Err(format!("schema: not {SCHEMA}"));
    }
    for k in ["experiment", "started", "finished"] {
        string(field(k)?, k)?;
    }
    let doc = field("document")?;
    for k in ["file", "title"] {
        string(&doc[k], &format!("document.{k}"))?;
    }
    for k in ["env", "config"] {
        field(k)?.as_object().ok_or(format!("{k}: not an object"))?;
    }
    let variants = array(field("variants")?, "variants")?;
    if variants.is_empty() {
        return Err("variants: empty".into());
    }
    for (i, var) in variants.iter().enumerate() {
        check_variant(var).map_err(|e| format!("variants[{i}].{e}"))?;
    }
    for (i, s) in array(field("sweeps")?, "sweeps")?.iter().enumerate() {
        let at = |k: &str| format!("sweeps[{i}].{k}");
        for k in ["name", "variant", "x", "x_unit", "unit"] {
            string(&s[k], &at(k))?;
        }
        unit(&s["x_unit"], &at("x_unit"))?;
        unit(&s["unit"], &at("unit"))?;
        for (j, p) in array(&s["points"], &at("points"))?.iter().enumerate() {
            if !p["x"].is_number() {
                return Err(at(&format!("points[{j}].x: not a number")));
            }
        }
    }
    for (i, c) in array(field("claims")?, "claims")?.iter().enumerate() {
        for k in ["id", "claim", "document", "where", "verdict", "reason"] {
            string(&c[k], &format!("claims[{i}].{k}"))?;
        }
        let verdict = c["verdict"].as_str().unwrap_or_default();
        if !super::claims::VERDICTS.contains(&verdict) {
            return Err(format!("claims[{i}].verdict: {verdict:?} is not a verdict"));
        }
        // A claim the run did not measure has no figures of ours (its reason says what
        // was missing); every other claim has them.
        let at = format!("claims[{i}].ours");
        match c["ours"].as_str() {
            Some("") if verdict == super::claims::Verdict::NotMeasured.as_str() => {}
            _ => {
                string(&c["ours"], &at)?;
            }
        }
    }
    Ok(())
}

/// What is wrong with one entry of `variants[]`, if anything.
pub fn check_variant(v: &Value) -> Result<(), String> {
    string(&v["name"], "name")?;
    let figures = v["figures"].as_object().ok_or("figures: not an object")?;
    array(&v["per_run"], "per_run")?;
    if v["unavailable"].is_string() {
        return Ok(());
    }
    if figures.is_empty() {
        return Err("figures: none, and not marked unavailable".into());
    }
    unit(&v["unit"], "unit")?;
    for (k, f) in figures {
        let at = |x: &str| format!("figures.{k}.{x}");
        if !(f["value"].is_number() || f["value"].is_null()) {
            return Err(at("value: not a number or null"));
        }
        unit(&f["unit"], &at("unit"))?;
        if !matches!(f["better"].as_str(), Some("lower" | "higher")) {
            return Err(at("better: not lower or higher"));
        }
        let runs = array(&f["runs"], &at("runs"))?;
        if runs.iter().any(|r| !(r.is_number() || r.is_null())) {
            return Err(at("runs: not numbers"));
        }
    }
    Ok(())
}

fn string<'a>(v: &'a Value, at: &str) -> Result<&'a str, String> {
    match v.as_str() {
        Some(s) if !s.is_empty() => Ok(s),
        Some(_) => Err(format!("{at}: empty")),
        None => Err(format!("{at}: missing or not a string")),
    }
}

fn array<'a>(v: &'a Value, at: &str) -> Result<&'a Vec<Value>, String> {
    v.as_array()
        .ok_or_else(|| format!("{at}: missing or not an array"))
}

fn unit(v: &Value, at: &str) -> Result<(), String> {
    let u = string(v, at)?;
    if UNITS.contains(&u) {
        Ok(())
    } else {
        Err(format!("{at}: {u:?} is not a unit"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_unit_has_its_word() {
        for (i, u) in [
            Unit::Ns,
            Unit::Ticks,
            Unit::Seconds,
            Unit::Ms,
            Unit::ItemsPerS,
            Unit::OpsPerS,
            Unit::Bytes,
            Unit::Items,
            Unit::Count,
            Unit::Ratio,
        ]
        .into_iter()
        .enumerate()
        {
            assert_eq!(u.as_str(), UNITS[i]);
        }
    }

    #[test]
    fn a_variant_without_figures_is_refused_unless_unavailable() {
        let v = Variant::new("x").into_value();
        assert!(check_variant(&v).unwrap_err().contains("figures"));
        let v = Variant::unavailable("x", "not built").into_value();
        assert!(check_variant(&v).is_ok());
    }

    #[test]
    fn a_figure_that_is_not_a_number_becomes_null() {
        let mut v = Variant::new("x");
        v.figure(
            "t",
            Unit::Seconds,
            Better::Lower,
            f64::NAN,
            [1.0, f64::INFINITY],
        );
        let v = v.into_value();
        assert!(v["figures"]["t"]["value"].is_null());
        assert!(v["figures"]["t"]["runs"][1].is_null());
        assert!(check_variant(&v).is_ok());
    }

    #[test]
    fn only_a_claim_not_measured_may_have_no_figures_of_ours() {
        let mut file = json!({
            "schema": SCHEMA, "experiment": "x", "started": "a", "finished": "b",
            "document": {"file": "000_x.txt", "title": "T"},
            "env": {}, "config": {}, "sweeps": [],
            "claims": [{"id": "a", "claim": "c", "document": "d", "where": "w",
                "ours": "", "verdict": "not measured", "reason": "libx missing"}],
            "variants": [Variant::unavailable("v", "why").into_value()],
        });
        assert_eq!(check(&file), Ok(()));
        file["claims"][0]["verdict"] = "holds".into();
        assert_eq!(check(&file).unwrap_err(), "claims[0].ours: empty");
        file["claims"][0]["verdict"] = "not measured".into();
        file["claims"][0]["reason"] = "".into();
        assert_eq!(check(&file).unwrap_err(), "claims[0].reason: empty");
        file["claims"][0]["reason"] = "r".into();
        file["claims"][0]["ours"] = json!(null);
        assert_eq!(
            check(&file).unwrap_err(),
            "claims[0].ours: missing or not a string"
        );
    }

    #[test]
    fn check_names_the_first_bad_field() {
        let mut good = json!({
            "schema": SCHEMA, "experiment": "x", "started": "a", "finished": "b",
            "document": {"file": "000_x.txt", "title": "T"},
            "env": {}, "config": {}, "sweeps": [], "claims": [],
            "variants": [Variant::unavailable("v", "why").into_value()],
        });
        assert_eq!(check(&good), Ok(()));
        good["claims"] = json!([{"id": "a", "claim": "c", "document": "d", "where": "w",
            "ours": "o", "verdict": "maybe", "reason": "r"}]);
        assert!(check(&good).unwrap_err().contains("claims[0].verdict"));
        good["claims"][0]["verdict"] = "holds".into();
        assert_eq!(check(&good), Ok(()));
        good["claims"][0]["where"] = "".into();
        assert_eq!(check(&good).unwrap_err(), "claims[0].where: empty");
        good["document"] = "000_x.txt".into();
        assert!(check(&good).unwrap_err().starts_with("document.file"));
    }
}
