//! The legend panel the showdown's charts draw right of their plot, so no
//! label ever covers a curve.

use plotters::coord::Shift;
use plotters::prelude::*;

/// One legend line: the label, the curve's style, and whether the curve is
/// dashed (a dashed curve has no point markers).
pub type Entry = (String, ShapeStyle, bool);

/// Draws `entries`, then `notes` (plain lines of text), top-down in `area`.
pub fn draw(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    entries: &[Entry],
    notes: &[&str],
) -> Result<(), Box<dyn std::error::Error>> {
    let font = ("sans-serif", 14).into_font();
    let mut y = 40;
    for (label, style, dashed) in entries {
        if *dashed {
            for x in [8, 20, 32] {
                area.draw(&PathElement::new(vec![(x, y), (x + 7, y)], *style))?;
            }
        } else {
            area.draw(&PathElement::new(vec![(8, y), (40, y)], *style))?;
            area.draw(&Circle::new((24, y), 3, style.color.filled()))?;
        }
        area.draw(&Text::new(label.as_str(), (48, y - 8), font.clone()))?;
        y += 24;
    }
    y += 8;
    for note in notes {
        area.draw(&Text::new(*note, (8, y - 8), font.clone()))?;
        y += 18;
    }
    Ok(())
}
