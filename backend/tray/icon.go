// Package tray keeps Conch's tray icon current: the icon is redrawn with a
// count (needs-you first, in amber, else the working count), and the title,
// tooltip and menu say what is going on. Linux trays have no badge API, so
// the count is drawn into the icon itself.
package tray

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"strconv"
)

// Counts are what the tray shows.
type Counts struct {
	Working  int
	NeedsYou int
}

// Label says the counts in words: "2 working · 1 needs your OK".
func Label(c Counts) string {
	var parts []string
	if c.Working > 0 {
		parts = append(parts, fmt.Sprintf("%d working", c.Working))
	}
	if c.NeedsYou > 0 {
		parts = append(parts, fmt.Sprintf("%d needs your OK", c.NeedsYou))
	}
	if len(parts) == 0 {
		return "Nothing running"
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return parts[0] + " · " + parts[1]
}

// Colours of the icon; the badge uses the status language's colours.
var (
	shellColour   = color.RGBA{0x3b, 0x4a, 0x6b, 0xff}
	amber         = color.RGBA{0xd9, 0x77, 0x06, 0xff}
	blue          = color.RGBA{0x25, 0x63, 0xeb, 0xff}
	white         = color.RGBA{0xff, 0xff, 0xff, 0xff}
	iconSize      = 64
	badgeDiameter = 36
)

// Badge returns the number the icon shows and its colour: needs-you first,
// else the working count; 0 for no badge.
func Badge(c Counts) (int, color.RGBA) {
	if c.NeedsYou > 0 {
		return c.NeedsYou, amber
	}
	return c.Working, blue
}

// Icon draws the tray icon for c as a PNG.
func Icon(c Counts) []byte {
	img := image.NewRGBA(image.Rect(0, 0, iconSize, iconSize))
	// The shell: a filled circle with a spiral notch, readable at 16 px.
	fillCircle(img, 28, 34, 24, shellColour)
	fillCircle(img, 28, 34, 10, white)
	fillCircle(img, 31, 34, 5, shellColour)
	if n, col := Badge(c); n > 0 {
		r := badgeDiameter / 2
		cx, cy := iconSize-r, r
		fillCircle(img, cx, cy, r+2, white)
		fillCircle(img, cx, cy, r, col)
		text := strconv.Itoa(n)
		if n > 9 {
			text = "9+"
		}
		drawText(img, text, cx, cy, white)
	}
	var buf bytes.Buffer
	_ = png.Encode(&buf, img)
	return buf.Bytes()
}

func fillCircle(img *image.RGBA, cx, cy, r int, c color.RGBA) {
	for y := cy - r; y <= cy+r; y++ {
		for x := cx - r; x <= cx+r; x++ {
			dx, dy := x-cx, y-cy
			if dx*dx+dy*dy <= r*r+r && image.Pt(x, y).In(img.Bounds()) {
				img.SetRGBA(x, y, c)
			}
		}
	}
}

// glyphs is a 3×5 pixel font for the badge's digits and "+".
var glyphs = map[rune][5]string{
	'0': {"###", "#.#", "#.#", "#.#", "###"},
	'1': {".#.", "##.", ".#.", ".#.", "###"},
	'2': {"###", "..#", "###", "#..", "###"},
	'3': {"###", "..#", ".##", "..#", "###"},
	'4': {"#.#", "#.#", "###", "..#", "..#"},
	'5': {"###", "#..", "###", "..#", "###"},
	'6': {"###", "#..", "###", "#.#", "###"},
	'7': {"###", "..#", ".#.", ".#.", ".#."},
	'8': {"###", "#.#", "###", "#.#", "###"},
	'9': {"###", "#.#", "###", "..#", "###"},
	'+': {"...", ".#.", "###", ".#.", "..."},
}

// drawText draws text centred on (cx, cy) with the pixel font, scaled so
// that it fills the badge.
func drawText(img *image.RGBA, text string, cx, cy int, c color.RGBA) {
	scale := 5
	if len(text) > 1 {
		scale = 3
	}
	w := (len(text)*4 - 1) * scale
	h := 5 * scale
	x0, y0 := cx-w/2, cy-h/2
	for i, ch := range text {
		g := glyphs[ch]
		for gy, row := range g {
			for gx, p := range row {
				if p != '#' {
					continue
				}
				for sy := 0; sy < scale; sy++ {
					for sx := 0; sx < scale; sx++ {
						img.SetRGBA(x0+(i*4+gx)*scale+sx, y0+gy*scale+sy, c)
					}
				}
			}
		}
	}
}
