//! Scale curves drawn as SVG log-log charts, so a benchmark's figures can sit in the docs as a
//! picture beside their table.

use std::path::Path;

use plotters::prelude::*;

/// One measured line of a chart: a label and its (size, cost) points.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// What the line stands for, e.g. "Keel" or "Codex 0.169".
    pub label: String,
    /// Points as (workload size, measured cost), both positive.
    pub points: Vec<(f64, f64)>,
}

/// A chart of how a cost grows with the workload, both axes logarithmic.
#[derive(Debug, Clone, PartialEq)]
pub struct ScaleChart {
    /// The chart's caption.
    pub title: String,
    /// What the x axis counts, e.g. "loaded idle threads".
    pub x_label: String,
    /// What the y axis measures, with its unit.
    pub y_label: String,
    /// The lines to draw.
    pub series: Vec<Series>,
}

/// Why a chart could not be written.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    /// A chart needs at least one positive point on a logarithmic axis.
    #[error("chart `{0}` has no positive point to draw")]
    Empty(String),
    /// The drawing backend failed (usually the file could not be written).
    #[error("drawing chart `{title}`: {message}")]
    Draw {
        /// The chart's title.
        title: String,
        /// The backend's message.
        message: String,
    },
}

const COLOURS: [RGBColor; 6] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x8c, 0x56, 0x4b),
];

impl ScaleChart {
    /// Writes the chart as an SVG file at `path`.
    pub fn write_svg(&self, path: &Path) -> Result<(), PlotError> {
        let positive = || {
            self.series
                .iter()
                .flat_map(|s| s.points.iter().copied())
                .filter(|&(x, y)| x > 0.0 && y > 0.0)
        };
        let (mut x_min, mut x_max, mut y_min, mut y_max) =
            (f64::INFINITY, 0.0_f64, f64::INFINITY, 0.0_f64);
        for (x, y) in positive() {
            x_min = x_min.min(x);
            x_max = x_max.max(x);
            y_min = y_min.min(y);
            y_max = y_max.max(y);
        }
        if x_max <= 0.0 {
            return Err(PlotError::Empty(self.title.clone()));
        }
        let draw_error = |err: &dyn std::fmt::Display| PlotError::Draw {
            title: self.title.clone(),
            message: err.to_string(),
        };
        // Some margin (×2 on x, ×3 on y) keeps a flat line and single points off the frame.
        let x_range = (x_min / 2.0)..(x_max * 2.0);
        let y_range = (y_min / 3.0)..(y_max * 3.0);
        let root = SVGBackend::new(path, (720, 440)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| draw_error(&e))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(&self.title, ("sans-serif", 20))
            .margin(12)
            .x_label_area_size(44)
            .y_label_area_size(64)
            .build_cartesian_2d(x_range.log_scale(), y_range.log_scale())
            .map_err(|e| draw_error(&e))?;
        chart
            .configure_mesh()
            .x_desc(self.x_label.as_str())
            .y_desc(self.y_label.as_str())
            .x_label_formatter(&|x| format_number(*x))
            .y_label_formatter(&|y| format_number(*y))
            .draw()
            .map_err(|e| draw_error(&e))?;
        for (index, series) in self.series.iter().enumerate() {
            let colour = COLOURS[index % COLOURS.len()];
            let points: Vec<(f64, f64)> = series
                .points
                .iter()
                .copied()
                .filter(|&(x, y)| x > 0.0 && y > 0.0)
                .collect();
            let label = match growth_exponent(&points) {
                Some(k) => format!("{} (grows as N^{k:.2})", series.label),
                None => series.label.clone(),
            };
            chart
                .draw_series(LineSeries::new(points.clone(), colour.stroke_width(2)))
                .map_err(|e| draw_error(&e))?
                .label(label)
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2))
                });
            chart
                .draw_series(points.iter().map(|&p| Circle::new(p, 3, colour.filled())))
                .map_err(|e| draw_error(&e))?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(|e| draw_error(&e))?;
        root.present().map_err(|e| draw_error(&e))
    }
}

/// How a cost grows with the workload: the least-squares slope of log(cost) over log(size),
/// i.e. k in cost ≈ c·N^k (1 is linear, below 1 better than linear). `None` under two sizes.
/// A cost with a large fixed part (a server's base RSS) reads low here; its growth above
/// that base is better judged by the cost per unit.
pub fn growth_exponent(points: &[(f64, f64)]) -> Option<f64> {
    let logs: Vec<(f64, f64)> = points
        .iter()
        .filter(|&&(x, y)| x > 0.0 && y > 0.0)
        .map(|&(x, y)| (x.ln(), y.ln()))
        .collect();
    let n = logs.len() as f64;
    if logs.len() < 2 {
        return None;
    }
    let mean_x = logs.iter().map(|p| p.0).sum::<f64>() / n;
    let mean_y = logs.iter().map(|p| p.1).sum::<f64>() / n;
    let spread: f64 = logs.iter().map(|p| (p.0 - mean_x).powi(2)).sum();
    if spread == 0.0 {
        return None;
    }
    let covariance: f64 = logs.iter().map(|p| (p.0 - mean_x) * (p.1 - mean_y)).sum();
    Some(covariance / spread)
}

/// An axis number without trailing noise: 100000 → "100k", 0.25 → "0.25".
fn format_number(value: f64) -> String {
    if value >= 1_000_000.0 {
        format!("{}M", trim(value / 1_000_000.0))
    } else if value >= 1_000.0 {
        format!("{}k", trim(value / 1_000.0))
    } else {
        trim(value)
    }
}

fn trim(value: f64) -> String {
    let text = format!("{value:.2}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_exponent_of_a_linear_and_a_flat_curve() {
        let linear = [(100.0, 2.0), (10_000.0, 200.0), (100_000.0, 2000.0)];
        let flat = [(1.0, 5.0), (1000.0, 5.0)];
        assert!((growth_exponent(&linear).unwrap() - 1.0).abs() < 1e-9);
        assert!(growth_exponent(&flat).unwrap().abs() < 1e-9);
        assert_eq!(growth_exponent(&[(1.0, 1.0)]), None);
    }

    #[test]
    fn a_chart_is_written_as_svg_with_its_labels() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("chart.svg");
        let chart = ScaleChart {
            title: "RSS by idle threads".into(),
            x_label: "threads".into(),
            y_label: "MiB".into(),
            series: vec![Series {
                label: "Keel".into(),
                points: vec![(1.0, 9.0), (100.0, 12.0), (1000.0, 50.0)],
            }],
        };
        chart.write_svg(&path).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(svg.starts_with("<svg"), "{svg:.80}");
        assert!(svg.contains("RSS by idle threads"));
        assert!(svg.contains("Keel (grows as N^"));
        let empty = ScaleChart {
            series: vec![],
            ..chart
        };
        assert!(matches!(empty.write_svg(&path), Err(PlotError::Empty(_))));
    }
}
