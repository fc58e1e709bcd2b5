/* Sizes and types of nussinov_pb.c, as PolyBench/C 4.2.1's nussinov.h writes them: an include
   guard, a dataset chosen by -D, a size that -D may override, the element type as a macro. */
#ifndef NUSSINOV_PB_H
#define NUSSINOV_PB_H

#if !defined(MINI_DATASET) && !defined(SMALL_DATASET) && !defined(MEDIUM_DATASET) && !defined(LARGE_DATASET)
#  define MEDIUM_DATASET
#endif

#if !defined(N)
#  ifdef MINI_DATASET
#    define N 60
#  endif
#  ifdef SMALL_DATASET
#    define N 180
#  endif
#  ifdef MEDIUM_DATASET
#    define N 500
#  endif
#  ifdef LARGE_DATASET
#    define N 2500
#  endif
#endif

#define _PB_N n

#ifndef DATA_TYPE
#  define DATA_TYPE int
#  define DATA_PRINTF_MODIFIER "%d "
#endif

#endif /* NUSSINOV_PB_H */
