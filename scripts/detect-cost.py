#!/usr/bin/env python3
"""Generated captures for the detection-cost measurement in docs/ledger.md ("Memory bounds").

usage: scripts/detect-cost.py KIND OUT.pcap   KIND: P (1 MiB of P in 4-byte segments, no SYN),
  valid4 (a valid client stream of 1 MiB in 4-byte segments), random (40 x 1 MiB random
  payload, 1448-byte segments), valid1448 (40 valid 1 MiB connections). Then time
  `h2ledger replay OUT.pcap --format json` on each."""
import struct, sys, random
def pcap(path, pkts):
    with open(path,'wb') as f:
        f.write(struct.pack('<IHHiIII',0xa1b2c3d4,2,4,0,0,65535,101))
        for i,p in enumerate(pkts):
            f.write(struct.pack('<IIII',1000+i//1000000,i%1000000,len(p),len(p))); f.write(p)
def seg(src,dst,sp,dp,seq,payload,flags=0x18,ack=1):
    tcp=struct.pack('>HHIIBBHHH',sp,dp,seq&0xffffffff,ack,5<<4,flags,65535,0,0)
    tot=20+len(tcp)+len(payload)
    ip=struct.pack('>BBHHHBBH4s4s',0x45,0,tot,0,0x4000,64,6,0,bytes(src),bytes(dst))
    return ip+tcp+payload
def conn(stream, segsize, idx=0, syn=False):
    src=[10,0,idx>>8&255,idx&255]; dst=[10,1,0,1]; sp=40000+idx%20000; dp=8080
    pk=[]; seq=1000
    if syn:
        pk.append(seg(src,dst,sp,dp,seq-1,b'',0x02,0)); pk.append(seg(dst,src,dp,sp,5000,b'',0x12,seq)); pk.append(seg(src,dst,sp,dp,seq,b'',0x10,5001))
    for i in range(0,len(stream),segsize):
        pk.append(seg(src,dst,sp,dp,seq+i,stream[i:i+segsize]))
    return pk
def frame(t,fl,sid,p): return struct.pack('>I',len(p))[1:]+bytes([t,fl])+struct.pack('>I',sid)+p
kind=sys.argv[1]; out=sys.argv[2]
if kind=='P':
    pcap(out, conn(b'P'*(1<<20), 4))
elif kind=='random':
    r=random.Random(1); pk=[]
    for c in range(40): pk+=conn(r.randbytes(1<<20), 1448, c)
    pcap(out, pk)
elif kind=='valid4':   # a valid client stream of the same size, in 4-byte segments
    s=b'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'+frame(4,0,0,b'')
    sid=1
    while len(s)<(1<<20):
        s+=frame(1,4,sid,b'\x82\x86\x84\x41\x8a\xa0\xe4\x1d\x13\x9d\x09\xb8\xf0\x1e\x07')+frame(0,1,sid,b'x'*40); sid+=2
    pcap(out, conn(s,4,0,True))
elif kind=='valid1448':
    pk=[]
    for c in range(40):
        s=b'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'+frame(4,0,0,b''); sid=1
        while len(s)<(1<<20):
            s+=frame(1,4,sid,b'\x82\x86\x84\x41\x8a\xa0\xe4\x1d\x13\x9d\x09\xb8\xf0\x1e\x07')+frame(0,1,sid,b'x'*40); sid+=2
        pk+=conn(s,1448,c,True)
    pcap(out, pk)
