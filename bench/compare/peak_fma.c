// bench/compare/peak_fma.c: one core's fp32 FMA peak, measured (issue 50 item 6: GEMM rates
// are stated against it). 16 independent accumulators of 512-bit FMAs, then of 256-bit FMAs,
// best of 5 rounds. Build and run: cc -O2 -mavx512f -mfma peak_fma.c -o peak && ./peak
// (an AVX2-only machine: drop the 512-bit half).
#include <immintrin.h>
#include <stdio.h>
#include <time.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
int main(void){
  __m512 a[16]; __m512 x=_mm512_set1_ps(1.0000001f), y=_mm512_set1_ps(0.9999999f);
  for(int i=0;i<16;i++) a[i]=_mm512_set1_ps((float)i);
  long n=200000000; double best=0;
  for(int r=0;r<5;r++){ double t=now();
    for(long k=0;k<n/16;k++){
#define F(i) a[i]=_mm512_fmadd_ps(a[i],x,y);
      F(0)F(1)F(2)F(3)F(4)F(5)F(6)F(7)F(8)F(9)F(10)F(11)F(12)F(13)F(14)F(15)
    }
    t=now()-t; double g=(double)(n/16)*16*16*2/t/1e9; if(g>best)best=g; }
  float s=0; for(int i=0;i<16;i++) s+=_mm512_reduce_add_ps(a[i]);
  // 256-bit too
  __m256 b[16]; __m256 x2=_mm256_set1_ps(1.0000001f), y2=_mm256_set1_ps(0.9999999f);
  for(int i=0;i<16;i++) b[i]=_mm256_set1_ps((float)i);
  double best2=0;
  for(int r=0;r<5;r++){ double t=now();
    for(long k=0;k<n/16;k++){
#define G(i) b[i]=_mm256_fmadd_ps(b[i],x2,y2);
      G(0)G(1)G(2)G(3)G(4)G(5)G(6)G(7)G(8)G(9)G(10)G(11)G(12)G(13)G(14)G(15)
    }
    t=now()-t; double g=(double)(n/16)*16*8*2/t/1e9; if(g>best2)best2=g; }
  for(int i=0;i<16;i++){float tmp[8];_mm256_storeu_ps(tmp,b[i]);s+=tmp[0];}
  printf("peak fp32 one core: avx512 FMA %.1f GFLOP/s, avx2 FMA %.1f GFLOP/s (checksum %g)\n",best,best2,s);
}
