# CPU emulation of gemm_q f16x2 dequant (gq_deqh, matmul.cuh): bit tricks + rounding vs the f32 decode.
# Run from the repo root: python3 bench/gq_deqh_emu.py
import struct, random, re
def f2h(x): return struct.unpack('<H', struct.pack('<e', x))[0]
def h2f(h): return struct.unpack('<e', struct.pack('<H', h & 0xffff))[0]
def lo(w): return h2f(w & 0xffff)
def hi(w): return h2f(w >> 16)
def pk(a,b): return f2h(a) | (f2h(b) << 16)
def sub(a,b): return pk(lo(a)-lo(b), hi(a)-hi(b))
def mul(a,b): return pk(lo(a)*lo(b), hi(a)*hi(b))
def fma(a,b,c): return pk(lo(a)*lo(b)+lo(c), hi(a)*hi(b)+hi(c))
def bperm(x,y,s):
    bs=[(x>>(8*i))&255 for i in range(4)]+[(y>>(8*i))&255 for i in range(4)]
    return sum(bs[(s>>(4*n))&7]<<(8*n) for n in range(4))
b01=lambda w: bperm(w,0x64646464,0x4140)
b23=lambda w: bperm(w,0x64646464,0x4342)
def unpack(o): return [v for w in o for v in (lo(w),hi(w))]
grid=[int(x,16) for x in re.findall(r'0x[0-9a-fA-F]+', open('crates/ds4-engine/src/cuda/kernels/iq2xxs_grid.inc').read())]
assert len(grid)==256
R=random.Random(1); worst={}
def rec(k, ref, got):
    for r,g in zip(ref,got):
        e=abs(r-g)/max(abs(r),1e-30) if r!=0 else abs(g)
        worst[k]=max(worst.get(k,0),e)
for it in range(3000):
    # Q8_0
    q=[R.randrange(256) for _ in range(8)]; d=h2f(f2h(R.uniform(1e-4,0.05)))
    qx=sum(q[i]<<(8*i) for i in range(4)); qy=sum(q[4+i]<<(8*i) for i in range(4))
    dh=f2h(d); d2=dh|(dh<<16)
    x0=qx^0x80808080; x1=qy^0x80808080
    o=[mul(sub(b01(x0),0x64806480),d2),mul(sub(b23(x0),0x64806480),d2),mul(sub(b01(x1),0x64806480),d2),mul(sub(b23(x1),0x64806480),d2)]
    sb=[v-256 if v>127 else v for v in q]
    ref=[h2f(f2h(d*v)) for v in sb]
    got=unpack(o); assert got==ref, (got,ref)
    # IQ2_XXS
    A=R.getrandbits(32); B=R.getrandbits(32); d=h2f(f2h(R.uniform(1e-4,0.05))); g=R.randrange(4)
    db=d*(0.5+(B>>28))*0.25; db2=pk(db,db)
    gi=(A>>(8*g))&255; s=(B>>(7*g))&127; s|=(bin(s).count('1')&1)<<7
    G=grid[gi]
    mm=[pk(float((G>>(16*p))&255), float((G>>(16*p+8))&255)) for p in range(4)]
    o=[]
    for p in range(4):
        sg=((s*((1<<(15-2*p))+(1<<(30-2*p))))&0xffffffff)&0x80008000
        o.append(mul(mm[p]^sg,db2))
    ref=[(-1 if (s>>i)&1 else 1)*db*((G>>(8*i))&255) for i in range(8)]
    rec('iq2', ref, unpack(o))
    # Q2_K / Q4_K
    for typ,bits in (('q2k',2),('q4k',4)):
        qx=R.getrandbits(32); qy=R.getrandbits(32); sh=R.randrange(4)*2 if bits==2 else R.choice([0,4])
        dl=h2f(f2h(R.uniform(1e-4,0.05)))*R.randrange(16); ml=h2f(f2h(R.uniform(1e-4,0.05)))*R.randrange(16)
        dl2=pk(dl,dl); nml2=pk(-ml,-ml); msk=0x03030303 if bits==2 else 0x0f0f0f0f
        x0=(qx>>sh)&msk; x1=(qy>>sh)&msk
        o=[fma(sub(f(x),0x64006400),dl2,nml2) for x in (x0,x1) for f in (b01,b23)]
        ref=[dl*((w>>(8*i+sh))&(2**bits-1))-ml for w in (qx,qy) for i in range(4)]
        # error relative to the block's scale (cancellation near dl*q == ml)
        got=unpack(o)
        sc=max(dl*(2**bits-1),ml,1e-30)
        worst[typ]=max(worst.get(typ,0),max(abs(a-b)/sc for a,b in zip(ref,got)))
print("Q8_0 bit-exact vs f16(d*q); worst:", worst)

# The scales in f16x2 arithmetic (matmul.cuh kq_scales, iq2_sub_scale; session 23) against the
# f32 form they replaced (f32 product, one cvt.rn to f16): every finite d for IQ2_XXS's factor,
# every finite d with sampled scale / min pairs for the K-quants. Expected: 0 differ (overflow
# to inf on both sides).
def f2hi(x):
    try: return f2h(x)
    except OverflowError: return 0x7c00 if x > 0 else 0xfc00
def mulx(a, b): return f2hi(lo(a)*lo(b)) | (f2hi(hi(a)*hi(b)) << 16)
n = bad = 0
for dh in range(0x10000):
    if (dh >> 10) & 31 == 31: continue
    d = h2f(dh)
    for nn in range(16):
        k = fma((nn*0x10001) | 0x64006400, 0x34003400, 0xDBFFDBFF)
        ref = f2hi(d*(0.5+nn)*0.25); n += 1
        bad += mulx(k, dh | (dh << 16)) != (ref | (ref << 16))
    dminh = (dh*7919+13) & 0x7fff
    if (dminh >> 10) & 31 == 31: continue
    dmin = h2f(dminh)
    for sc in range(0, 64, 1 if dh % 97 == 0 else 9):
        m = 63 - sc
        p = mulx(sub((sc | (m << 16)) | 0x64006400, 0x64006400), dh | (dminh << 16))
        rd, rm = f2hi(d*sc), f2hi(-(dmin*m)); n += 1
        bad += bperm(p, 0, 0x1010) != (rd | (rd << 16)) or bperm(p, 0, 0x3232) ^ 0x80008000 != (rm | (rm << 16))
print("f16x2 scales:", n, "checked,", bad, "differ")
