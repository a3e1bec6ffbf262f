"""The HTML report's pictures: inline SVG charts, the roofline, the timeline (its look,
its critical-path strips) and the page's only script."""
