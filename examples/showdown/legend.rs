//! The legend panel the showdown's charts draw right of their plot, so no
//! label ever covers a curve.

use plotters::coord::Shift;
use plotters::prelude::*;

/// How a curve is drawn, so its legend line looks the same.
#[derive(Clone, Copy, PartialEq)]
pub enum Mark {
    /// A dashed line without markers (the references).
    Dashed,
    /// A line through round markers (larder's rows).
    Circle,
    /// A line through square markers (the other rows).
    Square,
}

/// One legend line: the label, an optional second line under it (a
/// cache's hit ratio), the curve's style and its mark.
pub struct Entry {
    pub label: String,
    pub detail: Option<String>,
    pub style: ShapeStyle,
    pub mark: Mark,
}

/// Draws the marker of `mark` at `at` (the curves use it too).
pub fn marker<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    mark: Mark,
    at: (i32, i32),
    colour: RGBAColor,
    filled: bool,
) -> Result<(), Box<dyn std::error::Error>>
where
    DB::ErrorType: 'static,
{
    let style = if filled {
        colour.filled()
    } else {
        colour.stroke_width(2)
    };
    match mark {
        Mark::Dashed => {}
        Mark::Circle => area.draw(&Circle::new(at, 4, style))?,
        Mark::Square => area.draw(&Rectangle::new(
            [(at.0 - 4, at.1 - 4), (at.0 + 4, at.1 + 4)],
            style,
        ))?,
    }
    Ok(())
}

/// Draws `entries`, then `notes` (paragraphs, wrapped to the panel's
/// width), top-down in `area`.
pub fn draw(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    entries: &[Entry],
    notes: &[String],
) -> Result<(), Box<dyn std::error::Error>> {
    let font = ("sans-serif", 14).into_font();
    let detail_font = ("sans-serif", 12).into_font().color(&RGBColor(90, 90, 90));
    let mut y = 40;
    for entry in entries {
        if entry.mark == Mark::Dashed {
            for x in [8, 20, 32] {
                area.draw(&PathElement::new(vec![(x, y), (x + 7, y)], entry.style))?;
            }
        } else {
            area.draw(&PathElement::new(vec![(8, y), (40, y)], entry.style))?;
            marker(area, entry.mark, (24, y), entry.style.color, true)?;
        }
        area.draw(&Text::new(entry.label.as_str(), (48, y - 8), font.clone()))?;
        y += 22;
        if let Some(detail) = &entry.detail {
            area.draw(&Text::new(
                detail.as_str(),
                (48, y - 10),
                detail_font.clone(),
            ))?;
            y += 16;
        }
    }
    // About 7 pixels a character at 14 pixels.
    let chars = (area.dim_in_pixel().0.saturating_sub(16) / 7).max(20) as usize;
    for note in notes {
        y += 8;
        for line in wrap(note, chars) {
            area.draw(&Text::new(line, (8, y - 8), font.clone()))?;
            y += 18;
        }
    }
    Ok(())
}

/// `text` in lines of at most `chars` characters, broken between words.
fn wrap(text: &str, chars: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        match lines.last_mut() {
            Some(line) if line.chars().count() + 1 + word.chars().count() <= chars => {
                line.push(' ');
                line.push_str(word);
            }
            _ => lines.push(word.to_string()),
        }
    }
    lines
}
