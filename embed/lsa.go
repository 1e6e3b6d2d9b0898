package embed

import (
	"math"
	"math/rand/v2"
	"sort"
)

// termDoc is one document of the weighted term–document matrix: the
// vocabulary indices of its terms and their weights, the column scaled to
// unit length so that long documents do not dominate the decomposition.
type termDoc struct {
	terms []int32
	w     []float64
}

// lsa returns the k leading left singular vectors of the V×D term–document
// matrix A that docs hold (row-major, V×k) and the singular values, by a
// randomised range finder on A·Aᵀ with power iterations (Halko, Martinsson
// and Tropp): A·Aᵀ is never formed, each product with it is one pass over
// the documents, so the cost is passes × nonzeros × (k + oversampling).
func lsa(docs []termDoc, V, k, oversample, passes int, seed uint64) (u []float64, sigma []float64, kOut int) {
	l := min(k+oversample, V, len(docs))
	if l <= 0 {
		return nil, nil, 0
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	y := make([]float64, V*l) // row-major V×l
	for i := range y {
		y[i] = rng.NormFloat64()
	}
	z := make([]float64, l)
	mulAAt := func(q []float64) []float64 {
		out := make([]float64, V*l)
		for _, d := range docs {
			clear(z)
			for i, t := range d.terms {
				row := q[int(t)*l : int(t)*l+l]
				w := d.w[i]
				for j := range z {
					z[j] += w * row[j]
				}
			}
			for i, t := range d.terms {
				row := out[int(t)*l : int(t)*l+l]
				w := d.w[i]
				for j := range z {
					row[j] += w * z[j]
				}
			}
		}
		return out
	}
	orthonormalize(y, V, l, rng)
	for range passes {
		y = mulAAt(y)
		orthonormalize(y, V, l, rng)
	}
	// C = Qᵀ·A·Aᵀ·Q = Σ_d z_d·z_dᵀ with z_d = Qᵀ·a_d: an l×l matrix whose
	// eigenvectors rotate Q onto the singular vectors.
	c := make([]float64, l*l)
	for _, d := range docs {
		clear(z)
		for i, t := range d.terms {
			row := y[int(t)*l : int(t)*l+l]
			w := d.w[i]
			for j := range z {
				z[j] += w * row[j]
			}
		}
		for a := range l {
			if z[a] == 0 {
				continue
			}
			ca := c[a*l : a*l+l]
			for b := range l {
				ca[b] += z[a] * z[b]
			}
		}
	}
	vals, vecs := jacobiEigen(c, l)
	k = min(k, l)
	u = make([]float64, V*k)
	for t := range V {
		row := y[t*l : t*l+l]
		for j := range k {
			col := vecs[j]
			var s float64
			for a := range l {
				s += row[a] * col[a]
			}
			u[t*k+j] = s
		}
	}
	sigma = make([]float64, k)
	for j := range k {
		sigma[j] = math.Sqrt(max(vals[j], 0))
	}
	return u, sigma, k
}

// orthonormalize makes the l columns of the row-major V×l matrix y
// orthonormal (modified Gram–Schmidt, twice for round-off); a column that
// vanishes (the matrix has lower rank) is replaced by a random one.
func orthonormalize(y []float64, V, l int, rng *rand.Rand) {
	col := make([][]float64, l)
	for j := range l {
		c := make([]float64, V)
		for t := range V {
			c[t] = y[t*l+j]
		}
		col[j] = c
	}
	for j := range l {
		for attempt := 0; ; attempt++ {
			before := norm2(col[j])
			for range 2 {
				for i := range j {
					d := dot64(col[i], col[j])
					for t := range col[j] {
						col[j][t] -= d * col[i][t]
					}
				}
			}
			n := norm2(col[j])
			if n > 1e-10*max(before, 1e-300) || attempt == 3 {
				if n == 0 {
					n = 1
				}
				for t := range col[j] {
					col[j][t] /= n
				}
				break
			}
			for t := range col[j] {
				col[j][t] = rng.NormFloat64()
			}
		}
	}
	for j := range l {
		for t := range V {
			y[t*l+j] = col[j][t]
		}
	}
}

func dot64(a, b []float64) float64 {
	var s float64
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

func norm2(a []float64) float64 { return math.Sqrt(dot64(a, a)) }

// jacobiEigen returns the eigenvalues of the symmetric n×n matrix a
// (row-major, destroyed), largest first, and the matching unit
// eigenvectors, by cyclic Jacobi rotations: n is the sketch's width (a few
// hundred at most), where Jacobi is simple, accurate and fast enough.
func jacobiEigen(a []float64, n int) ([]float64, [][]float64) {
	v := make([]float64, n*n)
	for i := range n {
		v[i*n+i] = 1
	}
	for sweep := 0; sweep < 50; sweep++ {
		var off, total float64
		for i := range n {
			for j := range n {
				x := a[i*n+j] * a[i*n+j]
				total += x
				if i != j {
					off += x
				}
			}
		}
		if off <= 1e-22*total || total == 0 {
			break
		}
		for p := 0; p < n-1; p++ {
			for q := p + 1; q < n; q++ {
				apq := a[p*n+q]
				if math.Abs(apq) < 1e-300 {
					continue
				}
				theta := (a[q*n+q] - a[p*n+p]) / (2 * apq)
				t := math.Copysign(1, theta) / (math.Abs(theta) + math.Sqrt(theta*theta+1))
				c := 1 / math.Sqrt(t*t+1)
				s := t * c
				for k := range n { // columns p, q
					akp, akq := a[k*n+p], a[k*n+q]
					a[k*n+p] = c*akp - s*akq
					a[k*n+q] = s*akp + c*akq
				}
				for k := range n { // rows p, q
					apk, aqk := a[p*n+k], a[q*n+k]
					a[p*n+k] = c*apk - s*aqk
					a[q*n+k] = s*apk + c*aqk
				}
				for k := range n {
					vkp, vkq := v[k*n+p], v[k*n+q]
					v[k*n+p] = c*vkp - s*vkq
					v[k*n+q] = s*vkp + c*vkq
				}
			}
		}
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(x, y int) bool { return a[order[x]*n+order[x]] > a[order[y]*n+order[y]] })
	vals := make([]float64, n)
	vecs := make([][]float64, n)
	for r, i := range order {
		vals[r] = a[i*n+i]
		col := make([]float64, n)
		for k := range n {
			col[k] = v[k*n+i]
		}
		vecs[r] = col
	}
	return vals, vecs
}
