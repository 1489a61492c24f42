package rebalance

import (
	"os"

	"gonum.org/v1/plot/vg/vgimg"
)

// savePNG writes the canvas to path as a PNG.
func savePNG(img *vgimg.Canvas, path string) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	_, err = vgimg.PngCanvas{Canvas: img}.WriteTo(f)
	return err
}
