/* Sizes and types of syr2k_pb.c, in the way benchmark suites write their headers: an include
   guard, a dataset chosen by -D, sizes that -D may override, a typedef'd element type and
   macros for scalar constants and bounds. */
#ifndef SYR2K_PB_H
#define SYR2K_PB_H

#if !defined(SMALL_DATASET) && !defined(LARGE_DATASET)
#  define MEDIUM_DATASET
#endif

#ifdef SMALL_DATASET
#  define M 20
#  define N 30
#elif defined(LARGE_DATASET)
#  define M 1000
#  define N 1200
#else
#  define M 200
#  define N 240
#endif

typedef double elem_t;
#define DATA_TYPE elem_t
#define SCALAR_VAL(x) x
#define _PB_M m
#define _PB_N n
#define IDX(a, i, j) a[i][j]

#endif /* SYR2K_PB_H */
