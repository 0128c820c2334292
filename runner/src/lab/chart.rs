//! SVG charts with plotters: log-log line charts (CCDF, load sweep), a log-x density
//! chart (PDF), and bars (throughput). Each returns the SVG text; the caller writes it
//! with the results. A [`Chart`] is one of them as data: the results JSON keeps every
//! chart's data (`chart_data`), so that `runner report` draws the same SVG again from
//! the JSON alone.

use super::error::Error;
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::prelude::*;

/// One named line.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Series {
    /// Legend text.
    pub name: String,
    /// (x, y) points in x order.
    pub points: Vec<(f64, f64)>,
}

/// One chart as data: what [`Chart::render`] draws.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Chart {
    /// [`loglog`].
    LogLog {
        /// Title.
        title: String,
        /// X axis.
        x: String,
        /// Y axis.
        y: String,
        /// Lines.
        series: Vec<Series>,
    },
    /// [`logx`].
    LogX {
        /// Title.
        title: String,
        /// X axis.
        x: String,
        /// Y axis.
        y: String,
        /// Lines.
        series: Vec<Series>,
    },
    /// [`loglog_panels`].
    Panels {
        /// Each panel's title and lines.
        panels: Vec<(String, Vec<Series>)>,
        /// X axis.
        x: String,
        /// Y axis.
        y: String,
    },
    /// [`bars`].
    Bars {
        /// Title.
        title: String,
        /// Y axis.
        y: String,
        /// Name and value of each bar.
        bars: Vec<(String, f64)>,
    },
}

impl Chart {
    /// The chart with what JSON cannot carry left out (points and bars that are not
    /// finite numbers, which no chart draws anyway), so that the chart drawn from its
    /// data read back is the chart drawn now.
    pub fn finite(self) -> Chart {
        let keep = |series: Vec<Series>| -> Vec<Series> {
            series
                .into_iter()
                .map(|s| Series {
                    name: s.name,
                    points: s
                        .points
                        .into_iter()
                        .filter(|(x, y)| x.is_finite() && y.is_finite())
                        .collect(),
                })
                .collect()
        };
        match self {
            Chart::LogLog {
                title,
                x,
                y,
                series,
            } => Chart::LogLog {
                title,
                x,
                y,
                series: keep(series),
            },
            Chart::LogX {
                title,
                x,
                y,
                series,
            } => Chart::LogX {
                title,
                x,
                y,
                series: keep(series),
            },
            Chart::Panels { panels, x, y } => Chart::Panels {
                panels: panels.into_iter().map(|(t, s)| (t, keep(s))).collect(),
                x,
                y,
            },
            Chart::Bars { title, y, bars } => Chart::Bars {
                title,
                y,
                bars: bars.into_iter().filter(|b| b.1.is_finite()).collect(),
            },
        }
    }

    /// The SVG text.
    pub fn render(&self) -> Result<String, Error> {
        match self {
            Chart::LogLog {
                title,
                x,
                y,
                series,
            } => loglog(title, x, y, series),
            Chart::LogX {
                title,
                x,
                y,
                series,
            } => logx(title, x, y, series),
            Chart::Panels { panels, x, y } => loglog_panels(panels, x, y),
            Chart::Bars { title, y, bars: b } => bars(title, y, b),
        }
    }
}

const W: u32 = 960;
const H: u32 = 600;

fn color(i: usize) -> RGBColor {
    const P: [RGBColor; 8] = [
        RGBColor(31, 119, 180),
        RGBColor(255, 127, 14),
        RGBColor(44, 160, 44),
        RGBColor(214, 39, 40),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
        RGBColor(227, 119, 194),
        RGBColor(127, 127, 127),
    ];
    P[i % P.len()]
}

/// Short axis labels: `100`, `10k`, `1.5M`, `0.25`, `1e-5`.
pub fn axis_label(v: f64) -> String {
    let trim = |s: String| {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    };
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if a >= 1e9 {
        format!("{}G", trim(format!("{:.1}", v / 1e9)))
    } else if a >= 1e6 {
        format!("{}M", trim(format!("{:.1}", v / 1e6)))
    } else if a >= 1e3 {
        format!("{}k", trim(format!("{:.1}", v / 1e3)))
    } else if a >= 1.0 {
        trim(format!("{v:.1}"))
    } else if a >= 0.01 {
        trim(format!("{v:.2}"))
    } else {
        format!("{v:.0e}")
    }
}

fn err<E: std::fmt::Display>(e: E) -> Error {
    Error::Output(format!("chart: {e}"))
}

/// Range of positive values across series, padded; `None` when there are none.
fn positive_range(vals: impl Iterator<Item = f64>) -> Option<(f64, f64)> {
    let (mut lo, mut hi) = (f64::INFINITY, 0.0f64);
    for v in vals.filter(|v| *v > 0.0 && v.is_finite()) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    (hi > 0.0).then(|| (lo / 1.5, hi * 1.5))
}

fn linear_range(vals: impl Iterator<Item = f64>) -> (f64, f64) {
    let hi = vals.filter(|v| v.is_finite()).fold(0.0f64, f64::max);
    (0.0, if hi > 0.0 { hi * 1.1 } else { 1.0 })
}

fn draw<DB, X, Y>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
    x_label: &str,
    y_label: &str,
    x: X,
    y: Y,
    series: &[Series],
) -> Result<(), Error>
where
    DB: DrawingBackend,
    X: AsRangedCoord<Value = f64>,
    Y: AsRangedCoord<Value = f64>,
    X::CoordDescType: ValueFormatter<f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(x, y)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc(x_label)
        .y_desc(y_label)
        .x_label_formatter(&|v| axis_label(*v))
        .y_label_formatter(&|v| axis_label(*v))
        .draw()
        .map_err(err)?;
    for (i, s) in series.iter().enumerate() {
        let c = color(i);
        let pts: Vec<(f64, f64)> = s
            .points
            .iter()
            .copied()
            .filter(|(x, y)| x.is_finite() && y.is_finite())
            .collect();
        chart
            .draw_series(LineSeries::new(pts, c.stroke_width(2)))
            .map_err(err)?
            .label(s.name.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperRight)
        .draw()
        .map_err(err)?;
    Ok(())
}

/// Draws onto a white SVG canvas of `size` pixels and returns the SVG text.
fn render(
    size: (u32, u32),
    paint: impl FnOnce(&DrawingArea<SVGBackend<'_>, plotters::coord::Shift>) -> Result<(), Error>,
) -> Result<String, Error> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        paint(&root)?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// A log-log line chart (CCDF; one panel of the load sweep).
pub fn loglog(
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
) -> Result<String, Error> {
    render((W, H), |root| {
        draw_loglog(root, title, x_label, y_label, series)?;
        Ok(())
    })
}

fn draw_loglog<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
) -> Result<(), Error> {
    let xr = positive_range(series.iter().flat_map(|s| s.points.iter().map(|p| p.0)))
        .unwrap_or((1.0, 10.0));
    let yr = positive_range(series.iter().flat_map(|s| s.points.iter().map(|p| p.1)))
        .unwrap_or((1.0, 10.0));
    let positive: Vec<Series> = series
        .iter()
        .map(|s| Series {
            name: s.name.clone(),
            points: s
                .points
                .iter()
                .copied()
                .filter(|(x, y)| *x > 0.0 && *y > 0.0)
                .collect(),
        })
        .collect();
    draw(
        area,
        title,
        x_label,
        y_label,
        (xr.0..xr.1).log_scale(),
        (yr.0..yr.1).log_scale(),
        &positive,
    )
}

/// Several log-log panels side by side (the load sweep: p50, p99, p99.9).
pub fn loglog_panels(
    panels: &[(String, Vec<Series>)],
    x_label: &str,
    y_label: &str,
) -> Result<String, Error> {
    let n = panels.len().max(1);
    render((W * n as u32 / 2 + 200, H), |root| {
        let areas = root.split_evenly((1, n));
        for (area, (title, series)) in areas.iter().zip(panels) {
            draw_loglog(area, title, x_label, y_label, series)?;
        }
        Ok(())
    })
}

/// A line chart with a log x axis and a linear y axis (the PDF).
pub fn logx(title: &str, x_label: &str, y_label: &str, series: &[Series]) -> Result<String, Error> {
    render((W, H), |root| {
        let xr = positive_range(series.iter().flat_map(|s| s.points.iter().map(|p| p.0)))
            .unwrap_or((1.0, 10.0));
        let yr = linear_range(series.iter().flat_map(|s| s.points.iter().map(|p| p.1)));
        draw(
            root,
            title,
            x_label,
            y_label,
            (xr.0..xr.1).log_scale(),
            yr.0..yr.1,
            series,
        )?;
        Ok(())
    })
}

/// Vertical bars, one per name, value labelled above each.
pub fn bars(title: &str, y_label: &str, bars: &[(String, f64)]) -> Result<String, Error> {
    render((W, H), |root| {
        let n = bars.len().max(1);
        let (_, top) = linear_range(bars.iter().map(|b| b.1));
        let names: Vec<String> = bars.iter().map(|b| b.0.clone()).collect();
        let mut chart = ChartBuilder::on(root)
            .caption(title, ("sans-serif", 20))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), 0.0..top * 1.1)
            .map_err(err)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(n)
            .x_label_formatter(&|x| {
                let i = x.round();
                if (x - i).abs() < 1e-6 && i >= 0.0 {
                    names.get(i as usize).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .y_desc(y_label)
            .draw()
            .map_err(err)?;
        for (i, (_, v)) in bars.iter().enumerate() {
            let x = i as f64;
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(x - 0.35, 0.0), (x + 0.35, *v)],
                    color(i).filled(),
                )))
                .map_err(err)?;
            chart
                .draw_series(std::iter::once(Text::new(
                    format!("{v:.1}"),
                    (x - 0.15, *v + top * 0.03),
                    ("sans-serif", 14),
                )))
                .map_err(err)?;
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(name: &str, pts: &[(f64, f64)]) -> Series {
        Series {
            name: name.into(),
            points: pts.to_vec(),
        }
    }

    #[test]
    fn a_chart_read_back_from_json_draws_the_same_svg() {
        let charts = [
            Chart::LogLog {
                title: "t".into(),
                x: "x".into(),
                y: "y".into(),
                series: vec![s("a", &[(1.0, 0.1), (3.3, 1.0 / 3.0), (f64::NAN, 1.0)])],
            },
            Chart::LogX {
                title: "t".into(),
                x: "x".into(),
                y: "y".into(),
                series: vec![s("a", &[(2.0, 0.7), (7.1, 0.123_456_789_012_345_67)])],
            },
            Chart::Panels {
                panels: vec![("p50".into(), vec![s("a", &[(1e5, 80.0), (5e7, 264.0)])])],
                x: "x".into(),
                y: "y".into(),
            },
            Chart::Bars {
                title: "t".into(),
                y: "y".into(),
                bars: vec![("a".into(), 1.0 / 7.0), ("b".into(), f64::INFINITY)],
            },
        ];
        for c in charts {
            let c = c.finite();
            let back: Chart = serde_json::from_str(&serde_json::to_string(&c).unwrap()).unwrap();
            assert_eq!(back, c);
            assert_eq!(back.render().unwrap(), c.render().unwrap());
        }
    }

    #[test]
    fn charts_render_svg_with_legends() {
        let a = s(
            "handoff-spsc",
            &[(100.0, 1.0), (200.0, 0.1), (5000.0, 0.001)],
        );
        let b = s("mutex-condvar", &[(1000.0, 1.0), (50_000.0, 0.01)]);
        let svg = loglog(
            "CCDF",
            "latency (ns)",
            "fraction ≥ x",
            &[a.clone(), b.clone()],
        )
        .unwrap();
        assert!(
            svg.starts_with("<svg")
                && svg.contains("handoff-spsc")
                && svg.contains("mutex-condvar")
        );
        let svg = logx("PDF", "latency (ns)", "fraction", std::slice::from_ref(&a)).unwrap();
        assert!(svg.contains("<polyline") || svg.contains("<path"));
        let svg = loglog_panels(
            &[("p50".into(), vec![a.clone()]), ("p99".into(), vec![b])],
            "rate",
            "ns",
        )
        .unwrap();
        assert!(svg.contains("p50") && svg.contains("p99"));
        let svg = bars(
            "throughput",
            "M items/s",
            &[("a".into(), 10.0), ("b".into(), 3.5)],
        )
        .unwrap();
        assert!(svg.contains("10.0") && svg.contains("3.5"));
    }

    #[test]
    fn axis_labels_are_short() {
        assert_eq!(axis_label(100.0), "100");
        assert_eq!(axis_label(100_000.0), "100k");
        assert_eq!(axis_label(1_500_000.0), "1.5M");
        assert_eq!(axis_label(0.25), "0.25");
        assert_eq!(axis_label(0.000_099_999_9), "1e-4");
        assert_eq!(axis_label(0.0), "0");
    }

    #[test]
    fn empty_or_nonpositive_data_still_renders() {
        assert!(loglog("t", "x", "y", &[]).is_ok());
        assert!(loglog("t", "x", "y", &[s("z", &[(0.0, 0.0), (-1.0, 5.0)])]).is_ok());
        assert!(bars("t", "y", &[]).is_ok());
    }
}
