#include "textflag.h"

// func dotIntsWide(sums []int32, q []int16, codes []int8, wide int)
//
// For each vector i: sixteen int8 codes are sign-extended to int16
// (VPMOVSXBW), multiplied by sixteen query codes and summed in pairs into
// eight int32 lanes (VPMADDWD), added to the accumulator; the eight lanes
// are then added into sums[i]. Integer sums are exact, so the result is
// the plain loop's.
TEXT ·dotIntsWide(SB), NOSPLIT, $0-80
	MOVQ sums_base+0(FP), R8
	MOVQ sums_len+8(FP), DX
	MOVQ q_base+24(FP), SI
	MOVQ q_len+32(FP), R9     // the stride between vectors
	MOVQ codes_base+48(FP), DI
	MOVQ wide+72(FP), CX

vector:
	TESTQ DX, DX
	JZ    done
	VPXOR Y0, Y0, Y0
	VPXOR Y2, Y2, Y2
	XORQ  AX, AX
	MOVQ  CX, BX
	ANDQ  $-32, BX            // components taken two blocks a round

pair:
	CMPQ      AX, BX
	JGE       single
	VPMOVSXBW (DI)(AX*1), Y1
	VPMADDWD  (SI)(AX*2), Y1, Y1
	VPADDD    Y1, Y0, Y0
	VPMOVSXBW 16(DI)(AX*1), Y3
	VPMADDWD  32(SI)(AX*2), Y3, Y3
	VPADDD    Y3, Y2, Y2
	ADDQ      $32, AX
	JMP       pair

single:
	CMPQ      AX, CX
	JGE       sum
	VPMOVSXBW (DI)(AX*1), Y1
	VPMADDWD  (SI)(AX*2), Y1, Y1
	VPADDD    Y1, Y0, Y0

sum:
	VPADDD       Y2, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDD       X1, X0, X0
	VPSHUFD      $0x4E, X0, X1
	VPADDD       X1, X0, X0
	VPSHUFD      $0xB1, X0, X1
	VPADDD       X1, X0, X0
	VMOVD        X0, (R8)
	ADDQ         $4, R8
	ADDQ         R9, DI
	DECQ         DX
	JMP          vector

done:
	VZEROUPPER
	RET

// func dotFloatsWide(a, b []float32, wide int) float32
//
// The dot product of a[:wide] and b[:wide], wide a positive multiple of
// 16: two eight-lane accumulators of products (VMULPS, VADDPS, no fused
// multiply-add), added together, then their halves, then across. dotLanes
// (index.go) is the same sum in Go, to the same bits.
TEXT ·dotFloatsWide(SB), NOSPLIT, $0-60
	MOVQ a_base+0(FP), SI
	MOVQ b_base+24(FP), DI
	MOVQ wide+48(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	XORQ   AX, AX

block:
	CMPQ    AX, CX
	JGE     across
	VMOVUPS (SI)(AX*4), Y2
	VMULPS  (DI)(AX*4), Y2, Y2
	VADDPS  Y2, Y0, Y0
	VMOVUPS 32(SI)(AX*4), Y3
	VMULPS  32(DI)(AX*4), Y3, Y3
	VADDPS  Y3, Y1, Y1
	ADDQ    $16, AX
	JMP     block

across:
	VADDPS       Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VHADDPS      X0, X0, X0
	VHADDPS      X0, X0, X0
	VZEROUPPER
	MOVSS        X0, ret+56(FP)
	RET
