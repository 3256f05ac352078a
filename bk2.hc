                           LDC R1, c[0x0][0x28] ;
                           ACQBULK ;
                           S2R R0, SR_TID.X ;
                           LDC R34, c[0x0][0x2a0] ;
                           ULDC.64 UR4, c[0x0][0x2b8] ;
                           ULDC.64 UR8, c[0x0][0x208] ;
                           S2R R26, SR_CTAID.X ;
                           ISETP.EQ.U32.AND P0, PT, RZ, UR4, PT ;
                           PREEXIT ;
                           S2UR UR21, SR_CTAID.Y ;
                           SHF.R.S32.HI R11, RZ, 0x1f, R34 ;
                           ISETP.NE.AND P5, PT, R0, RZ, PT ;
                           LOP3.LUT R2, R0, 0x1f, RZ, 0xc0, !PT ;
                           SHF.L.U32 R7, R26, 0x5, RZ ;
                           ISETP.EQ.OR.EX P0, PT, RZ, UR5, P5, P0 ;
                           SHF.R.U32.HI R3, RZ, 0x5, R0 ;
                           LOP3.LUT R6, R7, 0xffffffe0, R2, 0xe2, !PT ;
                      @!P0 CS2R R20, SR_GLOBALTIMERLO ;
                           ULDC.64 UR4, c[0x0][0x298] ;
                      @!P0 LDC.64 R18, c[0x0][0x2b8] ;
                           ISETP.GE.AND P1, PT, R3, UR4, PT ;
                           USHF.R.S32.HI UR18, URZ, 0x1f, UR5 ;
                           IMAD R5, R11, UR5, RZ ;
                           SHF.R.S32.HI R7, RZ, 0x1f, R6.reuse ;
                           IMAD.WIDE.U32 R28, R34, UR5, RZ ;
                           ISETP.LT.AND P1, PT, R6, UR5, !P1 ;
                           UIMAD UR4, UR18, 0x3, URZ ;
                           MOV R10, UR5 ;
                           IMAD R9, R34.reuse, UR18, R5 ;
                           ISETP.LT.OR P2, PT, R34, 0x3, !P1 ;
                      @!P0 IMAD R5, R26, 0x3, RZ ;
                           ISETP.LT.OR P4, PT, R34.reuse, 0x2, !P1 ;
                           IMAD.WIDE.U32 R14, R3, R28, R6 ;
                           ISETP.LT.OR P6, PT, R34.reuse, 0x1, !P1 ;
                           ULDC.64 UR6, c[0x0][0x210] ;
                           ISETP.LT.OR P1, PT, R34, 0x4, !P1 ;
                           IMAD.U32 R31, RZ, RZ, UR18 ;
                           IADD3 R4, R29, R9, RZ ;
                      @!P2 LDC.64 R24, c[0x0][0x230] ;
                           IMAD R23, R4, R3, RZ ;
                      @!P0 IMAD.WIDE R18, R5, 0x8, R18 ;
                      @!P2 LEA R5, P3, R10, R14, 0x1 ;
                           IADD3 R15, R15, R23, RZ ;
                      @!P4 LDC.64 R16, c[0x0][0x230] ;
                      @!P0 STG.E.64 desc[UR8][R18.64], R20 ;
                      @!P1 LDC.64 R8, c[0x0][0x230] ;
                      @!P6 LDC.64 R12, c[0x0][0x230] ;
                      @!P2 LEA R22, P0, R5, R24, 0x1 ;
                      @!P2 LEA.HI.X R24, R10, R15, R31, 0x1, P3 ;
                      @!P4 IADD3 R30, P3, R14, UR5, RZ ;
                      @!P2 LEA.HI.X R23, R5, R25, R24, 0x1, P0 ;
                      @!P1 IMAD.WIDE.U32 R24, R10, 0x3, R14 ;
                      @!P4 LEA R16, P0, R30.reuse, R16, 0x1 ;
                      @!P4 IADD3.X R5, R15, UR18, RZ, P3, !PT ;
                      @!P2 LDG.E.U16 R19, desc[UR8][R22.64] ;
                      @!P4 LEA.HI.X R17, R30, R17, R5, 0x1, P0 ;
                      @!P1 IADD3 R5, R25, UR4, RZ ;
                      @!P1 LEA R8, P0, R24.reuse, R8, 0x1 ;
                      @!P4 LDG.E.U16 R18, desc[UR8][R16.64] ;
                      @!P1 LEA.HI.X R9, R24, R9, R5, 0x1, P0 ;
                      @!P6 LEA R12, P3, R14, R12, 0x1 ;
                      @!P1 LDG.E.U16 R24, desc[UR8][R8.64] ;
                      @!P6 LEA.HI.X R13, R14, R13, R15, 0x1, P3 ;
                      @!P6 LDG.E.U16 R12, desc[UR8][R12.64] ;
                           UIMAD.WIDE UR10, UR21, UR5, URZ ;
                           IMAD R14, R34.reuse, UR11, RZ ;
                           IMAD.WIDE.U32 R30, R34, UR10, RZ ;
                           IMAD R5, R11, UR10, R14 ;
                           IADD3 R14, P0, R6, R30, RZ ;
                           IMAD.IADD R5, R31, 0x1, R5 ;
                           USHF.L.U32 UR19, UR5, 0x1, URZ ;
                           IADD3 R11, P3, R14.reuse, UR5, RZ ;
                           IADD3.X R15, R7, R5, RZ, P0, !PT ;
                           USHF.L.U64.HI UR20, UR5, 0x1, UR18 ;
                           LEA R20, P0, R11, UR6, 0x2 ;
                           IADD3.X R8, R15, UR18, RZ, P3, !PT ;
                           IADD3 R7, P3, R14, UR19, RZ ;
                           LEA.HI.X R21, R11, UR7, R8, 0x2, P0 ;
                           IADD3.X R8, R15, UR20, RZ, P3, !PT ;
                           ISETP.GE.AND P3, PT, R6, UR5, PT ;
                           LEA R16, P0, R7, UR6, 0x2 ;
                           IMAD.WIDE.U32 R10, R10, 0x3, R14 ;
                           LEA.HI.X R17, R7, UR7, R8, 0x2, P0 ;
                           CS2R R6, SRZ ;
                           CS2R R8, SRZ ;
                           LEA R22, P0, R14.reuse, UR6, 0x2 ;
                           IADD3 R11, R11, UR4, RZ ;
                           BSSY B0,  ;
                           LEA.HI.X R23, R14, UR7, R15, 0x2, P0 ;
                           CS2R R14, SRZ ;
                           ISETP.GE.AND P0, PT, R34, 0x2, PT ;
                           IMAD.MOV.U32 R33, RZ, RZ, RZ ;
                      @!P2 HADD2.F32 R6, -RZ, R19.H0_H0 ;
                           HFMA2.MMA R19, -RZ, RZ, 0, 0 ;
                      @!P4 HADD2.F32 R7, -RZ, R18.H0_H0 ;
                      @!P1 HADD2.F32 R9, -RZ, R24.H0_H0 ;
                           LEA R24, P4, R10, UR6, 0x2 ;
                           LEA.HI.X R25, R10, UR7, R11, 0x2, P4 ;
                      @!P6 HADD2.F32 R8, -RZ, R12.H0_H0 ;
                           ISETP.GE.AND P6, PT, R34.reuse, 0x1, PT ;
                           ISETP.GE.AND P1, PT, R34.reuse, 0x3, PT ;
                           ISETP.GE.AND P2, PT, R34, 0x4, PT ;
                       @P3 BRA  ;
                           CS2R R10, SRZ ;
                           CS2R R12, SRZ ;
                           ULDC.64 UR4, c[0x0][0x218] ;
                       @P6 LDG.E R10, desc[UR8][R22.64] ;
                       @P0 LDG.E R11, desc[UR8][R20.64] ;
                       @P1 LDG.E R12, desc[UR8][R16.64] ;
                       @P2 LDG.E R13, desc[UR8][R24.64] ;
                           ISETP.NE.U32.AND P3, PT, RZ, UR4, PT ;
                           ISETP.NE.AND.EX P3, PT, RZ, UR5, PT, P3 ;
                           MOV R33, R10 ;
                           MOV R14, R11 ;
                           MOV R19, R12 ;
                           IMAD.MOV.U32 R15, RZ, RZ, R13 ;
                      @!P3 BRA  ;
                           LDC.64 R32, c[0x0][0x228] ;
                           IMAD R19, R34, UR21, RZ ;
                           CS2R R14, SRZ ;
                           CS2R R16, SRZ ;
                           IMAD R35, R19, R34, RZ ;
                           LDC.64 R36, c[0x0][0x220] ;
                           CS2R R20, SRZ ;
                           CS2R R22, SRZ ;
                           CS2R R24, SRZ ;
                           IMAD.WIDE R38, R35.reuse, 0x4, R32 ;
                           IADD3 R35, R35, R34, RZ ;
                           IADD3 R41, R35, R34.reuse, RZ ;
                       @P0 LDG.E R21, desc[UR8][R38.64+0x4] ;
                           IMAD.WIDE R36, R19, 0x4, R36 ;
                           CS2R R18, SRZ ;
                           IADD3 R43, R41, R34, RZ ;
                       @P1 LDG.E R23, desc[UR8][R38.64+0x8] ;
                       @P6 LDG.E R14, desc[UR8][R36.64] ;
                       @P0 LDG.E R15, desc[UR8][R36.64+0x4] ;
                       @P1 LDG.E R16, desc[UR8][R36.64+0x8] ;
                       @P2 LDG.E R17, desc[UR8][R36.64+0xc] ;
                           CS2R R44, SRZ ;
                       @P6 LDG.E R19, desc[UR8][R38.64] ;
                       @P2 LDG.E R25, desc[UR8][R38.64+0xc] ;
                           IMAD.WIDE R36, R35, 0x4, R32 ;
                           IMAD.WIDE R34, R41, 0x4, R32.reuse ;
                           CS2R R40, SRZ ;
                       @P0 LDG.E R18, desc[UR8][R36.64] ;
                           IMAD.WIDE R32, R43, 0x4, R32 ;
                           CS2R R38, SRZ ;
                           CS2R R42, SRZ ;
                       @P1 LDG.E R41, desc[UR8][R34.64+0x4] ;
                       @P1 LDG.E R39, desc[UR8][R34.64] ;
                       @P1 LDG.E R43, desc[UR8][R34.64+0x8] ;
                       @P2 LDG.E R45, desc[UR8][R34.64+0xc] ;
                       @P2 LDG.E R38, desc[UR8][R32.64] ;
                       @P2 LDG.E R40, desc[UR8][R32.64+0x4] ;
                       @P2 LDG.E R42, desc[UR8][R32.64+0x8] ;
                       @P2 LDG.E R44, desc[UR8][R32.64+0xc] ;
                       @P0 LDG.E R20, desc[UR8][R36.64+0x4] ;
                       @P1 LDG.E R22, desc[UR8][R36.64+0x8] ;
                       @P2 LDG.E R24, desc[UR8][R36.64+0xc] ;
                           LDC R36, c[0x0][0x2a4] ;
                           IMAD.MOV.U32 R47, RZ, RZ, RZ ;
                           ISETP.GE.AND P3, PT, R36, 0x1, PT ;
                      @!P3 BRA  ;
                           SHF.L.U32 R33, R26, 0x5, RZ ;
                           UMOV UR4, URZ ;
                           MOV R47, RZ ;
                           ULDC UR24, c[0x0][0x2a4] ;
                           LOP3.LUT R32, R33, 0xffffffe0, R0, 0xe2, !PT ;
:
                           UISETP.GE.AND UP1, UPT, UR4, UR24, UPT ;
                           HFMA2.MMA R46, -RZ, RZ, 0, 0 ;
                           UIADD3 UR12, UR4, 0x1, URZ ;
                           UIADD3 UR14, UR4, 0x2, URZ ;
                           PLOP3.LUT P4, PT, PT, PT, UP1, 0x80, 0x0 ;
                           UISETP.GE.AND UP0, UPT, UR12, UR24, UPT ;
                           @!UP1 USHF.R.S32.HI UR7, URZ, 0x1f, UR4 ;
                           @!UP1 UMOV UR6, UR4 ;
                           @!UP1 ULDC UR13, c[0x0][0x29c] ;
                           @!UP1 UIMAD.WIDE UR6, UR21, UR24, UR6 ;
                           @!UP1 UIMAD UR5, UR7, UR13, URZ ;
                      @!P4 SHF.R.S32.HI R33, RZ, 0x1f, R32 ;
                           MOV R35, UR6 ;
                           @!UP1 UIMAD UR5, UR6, UR18, UR5 ;
                           @!UP1 ULDC.64 UR6, c[0x0][0x218] ;
                      @!P4 IMAD.WIDE.U32 R34, R35, UR13, R32 ;
                           @!UP0 USHF.R.S32.HI UR13, URZ, 0x1f, UR12 ;
                           UISETP.GE.AND UP1, UPT, UR14, UR24, UPT ;
                      @!P4 VIADD R35, R35, UR5 ;
                      @!P4 LEA R36, P3, R34, UR6, 0x2 ;
                      @!P4 LEA.HI.X R37, R34, UR7, R35, 0x2, P3 ;
                           @!UP0 UIMAD.WIDE UR6, UR21, UR24, UR12 ;
                           PLOP3.LUT P3, PT, PT, PT, UP0, 0x80, 0x0 ;
                           @!UP0 ULDC UR13, c[0x0][0x29c] ;
                      @!P4 LDG.E R46, desc[UR8][R36.64] ;
                           @!UP0 UIMAD UR5, UR7, UR13, URZ ;
                           MOV R49, UR6 ;
                           @!UP0 UIMAD UR5, UR6, UR18, UR5 ;
                           @!UP0 ULDC.64 UR6, c[0x0][0x218] ;
                      @!P3 SHF.R.S32.HI R35, RZ, 0x1f, R32 ;
                      @!P3 MOV R34, R32 ;
                      @!P3 IMAD.WIDE.U32 R34, R49, UR13, R34 ;
                           @!UP1 USHF.R.S32.HI UR15, URZ, 0x1f, UR14 ;
                           @!UP1 ULDC UR13, c[0x0][0x29c] ;
                      @!P3 VIADD R35, R35, UR5 ;
                      @!P3 LEA R52, P4, R34, UR6, 0x2 ;
                      @!P3 LEA.HI.X R53, R34, UR7, R35, 0x2, P4 ;
                           PLOP3.LUT P4, PT, PT, PT, UP1, 0x80, 0x0 ;
                           @!UP1 UIMAD.WIDE UR6, UR21, UR24, UR14 ;
                           HFMA2.MMA R48, -RZ, RZ, 0, 0 ;
                           @!UP1 UIMAD UR5, UR7, UR13, URZ ;
                           MOV R37, UR6 ;
                           UIADD3 UR16, UR4, 0x3, URZ ;
                           @!UP1 UIMAD UR5, UR6, UR18, UR5 ;
                      @!P4 SHF.R.S32.HI R35, RZ, 0x1f, R32 ;
                      @!P4 MOV R34, R32 ;
                           UISETP.GE.AND UP0, UPT, UR16, UR24, UPT ;
                      @!P3 LDG.E R48, desc[UR8][R52.64] ;
                           @!UP1 ULDC.64 UR6, c[0x0][0x218] ;
                      @!P4 IMAD.WIDE.U32 R34, R37, UR13, R34 ;
                      @!P4 VIADD R35, R35, UR5 ;
                      @!P4 LEA R36, P3, R34.reuse, UR6, 0x2 ;
                           @!UP0 USHF.R.S32.HI UR17, URZ, 0x1f, UR16 ;
                      @!P4 LEA.HI.X R37, R34, UR7, R35, 0x2, P3 ;
                           @!UP0 ULDC UR13, c[0x0][0x29c] ;
                           PLOP3.LUT P3, PT, PT, PT, UP0, 0x80, 0x0 ;
                           @!UP0 UIMAD.WIDE UR6, UR21, UR24, UR16 ;
                           CS2R R50, SRZ ;
                           @!UP0 UIMAD UR5, UR7, UR13, URZ ;
                           MOV R49, UR6 ;
                           UIADD3 UR22, UR4, 0x4, URZ ;
                      @!P4 LDG.E R51, desc[UR8][R36.64] ;
                      @!P3 SHF.R.S32.HI R35, RZ, 0x1f, R32 ;
                      @!P3 MOV R34, R32 ;
                           @!UP0 UIMAD UR5, UR6, UR18, UR5 ;
                           UISETP.GE.AND UP1, UPT, UR22, UR24, UPT ;
                      @!P3 IMAD.WIDE.U32 R34, R49, UR13, R34 ;
                           @!UP0 ULDC.64 UR6, c[0x0][0x218] ;
                      @!P3 IADD3 R35, R35, UR5, RZ ;
                      @!P3 LEA R36, P4, R34.reuse, UR6, 0x2 ;
                           @!UP1 USHF.R.S32.HI UR23, URZ, 0x1f, UR22 ;
                      @!P3 LEA.HI.X R37, R34, UR7, R35, 0x2, P4 ;
                           @!UP1 ULDC UR13, c[0x0][0x29c] ;
                           PLOP3.LUT P4, PT, PT, PT, UP1, 0x80, 0x0 ;
                           @!UP1 UIMAD.WIDE UR6, UR21, UR24, UR22 ;
                           UIADD3 UR26, UR4, 0x5, URZ ;
                      @!P3 LDG.E R50, desc[UR8][R36.64] ;
                           @!UP1 UIMAD UR5, UR7, UR13, URZ ;
                           IMAD.U32 R49, RZ, RZ, UR6 ;
                           @!UP1 UIMAD UR5, UR6, UR18, UR5 ;
                      @!P4 SHF.R.S32.HI R35, RZ, 0x1f, R32 ;
                      @!P4 MOV R34, R32 ;
                           UISETP.GE.AND UP0, UPT, UR26, UR24, UPT ;
                           @!UP1 ULDC.64 UR6, c[0x0][0x218] ;
                      @!P4 IMAD.WIDE.U32 R34, R49, UR13, R34 ;
                      @!P4 IADD3 R35, R35, UR5, RZ ;
                      @!P4 LEA R36, P3, R34.reuse, UR6, 0x2 ;
                           @!UP0 USHF.R.S32.HI UR27, URZ, 0x1f, UR26 ;
                           HFMA2.MMA R49, -RZ, RZ, 0, 0 ;
                           @!UP0 ULDC UR13, c[0x0][0x29c] ;
                      @!P4 LEA.HI.X R37, R34, UR7, R35, 0x2, P3 ;
                           PLOP3.LUT P3, PT, PT, PT, UP0, 0x80, 0x0 ;
                           @!UP0 UIMAD.WIDE UR6, UR21, UR24, UR26 ;
                           @!UP0 UIMAD UR5, UR7, UR13, URZ ;
                      @!P4 LDG.E R49, desc[UR8][R36.64] ;
                           IMAD.U32 R53, RZ, RZ, UR6 ;
                           UIADD3 UR28, UR4, 0x6, URZ ;
                      @!P3 SHF.R.S32.HI R35, RZ, 0x1f, R32 ;
                      @!P3 MOV R34, R32 ;
                           @!UP0 UIMAD UR5, UR6, UR18, UR5 ;
                           UISETP.GE.AND UP1, UPT, UR28, UR24, UPT ;
                      @!P3 IMAD.WIDE.U32 R34, R53, UR13, R34 ;
                           @!UP0 ULDC.64 UR6, c[0x0][0x218] ;
                      @!P3 IADD3 R35, R35, UR5, RZ ;
                      @!P3 LEA R36, P4, R34.reuse, UR6, 0x2 ;
                           @!UP1 USHF.R.S32.HI UR29, URZ, 0x1f, UR28 ;
                      @!P3 LEA.HI.X R37, R34, UR7, R35, 0x2, P4 ;
                           @!UP1 ULDC UR13, c[0x0][0x29c] ;
                           PLOP3.LUT P4, PT, PT, PT, UP1, 0x80, 0x0 ;
                           @!UP1 UIMAD.WIDE UR6, UR21, UR24, UR28 ;
                           HFMA2.MMA R52, -RZ, RZ, 0, 0 ;
                           @!UP1 UIMAD UR5, UR7, UR13, URZ ;
                           IMAD.U32 R53, RZ, RZ, UR6 ;
                           UIADD3 UR30, UR4, 0x7, URZ ;
                      @!P4 SHF.R.S32.HI R35, RZ, 0x1f, R32 ;
                      @!P4 MOV R34, R32 ;
                           @!UP1 UIMAD UR5, UR6, UR18, UR5 ;
                      @!P3 LDG.E R52, desc[UR8][R36.64] ;
                           UISETP.GE.AND UP0, UPT, UR30, UR24, UPT ;
                      @!P4 IMAD.WIDE.U32 R34, R53, UR13, R34 ;
                           @!UP1 ULDC.64 UR6, c[0x0][0x218] ;
                      @!P4 IADD3 R35, R35, UR5, RZ ;
                      @!P4 LEA R36, P3, R34.reuse, UR6, 0x2 ;
                           @!UP0 USHF.R.S32.HI UR31, URZ, 0x1f, UR30 ;
                      @!P4 LEA.HI.X R37, R34, UR7, R35, 0x2, P3 ;
                           @!UP0 ULDC UR13, c[0x0][0x29c] ;
                           PLOP3.LUT P3, PT, PT, PT, UP0, 0x80, 0x0 ;
                           @!UP0 UIMAD.WIDE UR6, UR21, UR24, UR30 ;
                           HFMA2.MMA R53, -RZ, RZ, 0, 0 ;
                           @!UP0 UIMAD UR5, UR7, UR13, URZ ;
                           IMAD.U32 R55, RZ, RZ, UR6 ;
                           @!UP0 UIMAD UR5, UR6, UR18, UR5 ;
                           @!UP0 ULDC.64 UR6, c[0x0][0x218] ;
                      @!P3 SHF.R.S32.HI R35, RZ, 0x1f, R32 ;
                      @!P4 LDG.E R53, desc[UR8][R36.64] ;
                      @!P3 MOV R34, R32 ;
                      @!P3 IMAD.WIDE.U32 R34, R55, UR13, R34 ;
                      @!P3 IADD3 R35, R35, UR5, RZ ;
                      @!P3 LEA R36, P4, R34, UR6, 0x2 ;
                      @!P3 LEA.HI.X R37, R34, UR7, R35, 0x2, P4 ;
                           HFMA2.MMA R34, -RZ, RZ, 0, 0 ;
                      @!P3 LDG.E R34, desc[UR8][R36.64] ;
                           UISETP.GE.AND UP1, UPT, UR4, UR24, UPT ;
                           UISETP.GE.AND UP0, UPT, UR12, UR24, UPT ;
                           PLOP3.LUT P3, PT, PT, PT, UP1, 0x80, 0x0 ;
                           UISETP.GE.AND UP1, UPT, UR14, UR24, UPT ;
                           PLOP3.LUT P4, PT, PT, PT, UP0, 0x80, 0x0 ;
                           UISETP.GE.AND UP0, UPT, UR16, UR24, UPT ;
                           UIADD3 UR4, UR4, 0x8, URZ ;
                      @!P3 FADD R47, R46, R47 ;
                           PLOP3.LUT P3, PT, PT, PT, UP1, 0x80, 0x0 ;
                           UISETP.GE.AND UP1, UPT, UR22, UR24, UPT ;
                      @!P4 FADD R47, R47, R48 ;
                           PLOP3.LUT P4, PT, PT, PT, UP0, 0x80, 0x0 ;
                           UISETP.GE.AND UP0, UPT, UR26, UR24, UPT ;
                      @!P3 FADD R47, R47, R51 ;
                           PLOP3.LUT P3, PT, PT, PT, UP1, 0x80, 0x0 ;
                           UISETP.GE.AND UP1, UPT, UR28, UR24, UPT ;
                      @!P4 FADD R47, R47, R50 ;
                           PLOP3.LUT P4, PT, PT, PT, UP0, 0x80, 0x0 ;
                           UISETP.GE.AND UP0, UPT, UR30, UR24, UPT ;
                      @!P3 FADD R47, R47, R49 ;
                           PLOP3.LUT P3, PT, PT, PT, UP1, 0x80, 0x0 ;
                      @!P4 FADD R47, R47, R52 ;
                           PLOP3.LUT P4, PT, PT, PT, UP0, 0x80, 0x0 ;
                           UISETP.GE.AND UP0, UPT, UR4, UR24, UPT ;
                      @!P3 FADD R47, R47, R53 ;
                           PLOP3.LUT P3, PT, PT, PT, UP0, 0x80, 0x0 ;
                      @!P4 FADD R47, R47, R34 ;
                      @!P3 BRA  ;
:
                           IMAD.MOV.U32 R33, RZ, RZ, RZ ;
                      @!P6 BRA  ;
                           LDC R34, c[0x0][0x2a0] ;
                           FMUL R32, R19, R10 ;
                           FFMA R33, R47, R14, R32 ;
                           ISETP.NE.AND P4, PT, R34.reuse, 0x1, PT ;
                           ISETP.GT.AND P3, PT, R34, 0x2, PT ;
                       @P4 FFMA R33, R18, R11, R33 ;
                           ISETP.GT.AND P4, PT, R34, 0x3, PT ;
                       @P3 FFMA R33, R39, R12, R33 ;
                       @P4 FFMA R33, R38, R13, R33 ;
:
                           HFMA2.MMA R14, -RZ, RZ, 0, 0 ;
                           MOV R19, RZ ;
                       @P2 FMUL R18, R25, R10 ;
                      @!P0 BRA  ;
                           LDC R25, c[0x0][0x2a0] ;
                           FMUL R14, R21, R10 ;
                           FFMA R15, R47, R15, R14 ;
                           FFMA R14, R20, R11, R15 ;
                           ISETP.NE.AND P3, PT, R25.reuse, 0x2, PT ;
                           ISETP.GT.AND P4, PT, R25, 0x3, PT ;
                       @P3 FFMA R14, R41, R12, R14 ;
                       @P4 FFMA R14, R40, R13, R14 ;
:
                      @!P1 BRA  ;
                           LDC R15, c[0x0][0x2a0] ;
                           FMUL R10, R23, R10 ;
                           ISETP.NE.AND P3, PT, R15, 0x3, PT ;
                           FFMA R15, R47, R16, R10 ;
                           FFMA R22, R22, R11, R15 ;
                           FFMA R19, R43, R12, R22 ;
                       @P3 FFMA R19, R42, R13, R19 ;
:
                       @P2 FFMA R17, R47, R17, R18 ;
                           MOV R15, RZ ;
                       @P2 FFMA R24, R24, R11, R17 ;
                       @P2 FFMA R45, R45, R12, R24 ;
                       @P2 FFMA R15, R44, R13, R45 ;
:
                           BSYNC B0 ;
:
                           ULDC UR4, c[0x0][0x298] ;
                           ULDC UR7, c[0x0][0x29c] ;
                           IMAD.U32 R34, RZ, RZ, UR4 ;
                           ULDC UR14, c[0x0][0x298] ;
                           ULDC.64 UR4, c[0x0][0x238] ;
                           ULDC.64 UR12, c[0x0][0x230] ;
                           ISETP.GE.AND P3, PT, R3, R34, PT ;
                       @P3 BRA  ;
                           LDC R25, c[0x0][0xc] ;
                           S2R R18, SR_CTAID.Y ;
                           LEA R10, R26, R2, 0x5 ;
                           ULDC UR6, c[0x0][0x29c] ;
                           SHF.R.S32.HI R27, RZ, 0x1f, R26 ;
                           ISETP.GE.AND P4, PT, R10, UR6, PT ;
                           LDC R17, c[0x0][RZ] ;
                           MOV R16, R3 ;
                           SHF.R.S32.HI R11, RZ, 0x1f, R25 ;
:
                           BSSY B0,  ;
                           HFMA2.MMA R23, -RZ, RZ, 0, 0 ;
                       @P4 BRA  ;
                           S2R R12, SR_TID.X ;
                           IMAD.SHL.U32 R13, R26, 0x20, RZ ;
                           SHF.R.S32.HI R21, RZ, 0x1f, R16 ;
                           IMAD R10, R4, R16, RZ ;
                           MOV R23, RZ ;
                           IMAD R21, R21, R28, R10 ;
                           LOP3.LUT R12, R13, 0xffffffe0, R12, 0xe2, !PT ;
                           SHF.R.S32.HI R13, RZ, 0x1f, R12 ;
                           IMAD.WIDE.U32 R12, R16, R28, R12 ;
                           IADD3 R35, R13, R21, RZ ;
                      @!P6 BRA  ;
                           ISETP.NE.AND P3, PT, R16, R3, PT ;
                           BSSY B1,  ;
                           MOV R10, R8 ;
                      @!P3 BRA  ;
                           LEA R20, P3, R12, UR12, 0x1 ;
                           LEA.HI.X R21, R12, UR13, R35, 0x1, P3 ;
                           LDG.E.U16 R20, desc[UR8][R20.64] ;
                           HADD2.F32 R10, -RZ, R20.H0_H0 ;
:
                           BSYNC B1 ;
:
                           FFMA R23, R10, R33, RZ ;
:
                      @!P0 BRA  ;
                           ISETP.NE.AND P3, PT, R16, R3, PT ;
                           BSSY B1,  ;
                           IMAD.MOV.U32 R10, RZ, RZ, R7 ;
                      @!P3 BRA  ;
                           IADD3 R10, P3, R12, UR7, RZ ;
                           IADD3.X R21, R35, UR18, RZ, P3, !PT ;
                           LEA R20, P3, R10, UR12, 0x1 ;
                           LEA.HI.X R21, R10, UR13, R21, 0x1, P3 ;
                           LDG.E.U16 R20, desc[UR8][R20.64] ;
                           HADD2.F32 R10, -RZ, R20.H0_H0 ;
:
                           BSYNC B1 ;
:
                           FFMA R23, R10, R14, R23 ;
:
                      @!P1 BRA  ;
                           ISETP.NE.AND P3, PT, R16, R3, PT ;
                           BSSY B1,  ;
                           MOV R10, R6 ;
                      @!P3 BRA  ;
                           IADD3 R10, P3, R12, UR19, RZ ;
                           IADD3.X R21, R35, UR20, RZ, P3, !PT ;
                           LEA R20, P3, R10, UR12, 0x1 ;
                           LEA.HI.X R21, R10, UR13, R21, 0x1, P3 ;
                           LDG.E.U16 R20, desc[UR8][R20.64] ;
                           HADD2.F32 R10, -RZ, R20.H0_H0 ;
:
                           BSYNC B1 ;
:
                           FFMA R23, R10, R19, R23 ;
:
                      @!P2 BRA  ;
                           ISETP.NE.AND P3, PT, R16, R3, PT ;
                           BSSY B1,  ;
                           MOV R10, R9 ;
                      @!P3 BRA  ;
                           LDC R21, c[0x0][0x29c] ;
                           MOV R13, R35 ;
                           UIMAD UR6, UR18, 0x3, URZ ;
                           IMAD.WIDE.U32 R12, R21, 0x3, R12 ;
                           VIADD R13, R13, UR6 ;
                           LEA R20, P3, R12, UR12, 0x1 ;
                           LEA.HI.X R21, R12, UR13, R13, 0x1, P3 ;
                           LDG.E.U16 R20, desc[UR8][R20.64] ;
                           HADD2.F32 R10, -RZ, R20.H0_H0 ;
:
                           BSYNC B1 ;
:
                           FFMA R23, R10, R15, R23 ;
:
                           BSYNC B0 ;
:
                           UMOV UR6, 0xffffffff ;
                           BRA.DIV UR6,  ;
:
                           SHFL.BFLY PT, R24, R23, 0x10, 0x1f ;
                           FADD R23, R24, R23 ;
:
                           SHFL.BFLY PT, R24, R23, 0x8, 0x1f ;
                           FADD R10, R23, R24 ;
:
                           SHFL.BFLY PT, R24, R10, 0x4, 0x1f ;
                           FADD R12, R10, R24 ;
:
                           SHFL.BFLY PT, R24, R12, 0x2, 0x1f ;
                           FADD R13, R12, R24 ;
:
                           SHFL.BFLY PT, R24, R13, 0x1, 0x1f ;
:
                           ISETP.NE.AND P3, PT, R2, RZ, PT ;
                           BSSY B0,  ;
                           FADD R23, R13, R24 ;
                       @P3 BRA  ;
                           SHF.R.S32.HI R13, RZ, 0x1f, R16 ;
                           MOV R12, R16 ;
                           IMAD.WIDE R12, R18, UR14, R12 ;
                           IMAD R10, R13, R25.reuse, RZ ;
                           IMAD.WIDE.U32 R20, R12, R25, R26 ;
                           IMAD R13, R12, R11, R10 ;
                           LEA R12, P3, R20, UR4, 0x2 ;
                           IADD3 R13, R21, R13, RZ ;
                           LEA.HI.X R13, R20, UR5, R13, 0x2, P3 ;
                           STG.E desc[UR8][R12.64], R23 ;
:
                           BSYNC B0 ;
:
                           LEA.HI R16, R17, R16, RZ, 0x1b ;
                           MOV R34, UR14 ;
                           ISETP.GE.AND P3, PT, R16, R34, PT ;
                      @!P3 BRA  ;
:
                           WARPSYNC.ALL ;
                           BAR.SYNC.DEFER_BLOCKING 0x0 ;
                           ULDC.64 UR12, c[0x0][0x2b8] ;
                           ISETP.EQ.U32.AND P4, PT, RZ, UR12, PT ;
                           ISETP.EQ.OR.EX P4, PT, RZ, UR13, P5, P4 ;
                      @!P4 CS2R R8, SR_GLOBALTIMERLO ;
                      @!P4 LDC.64 R6, c[0x0][0x2b8] ;
                      @!P4 IMAD.MOV.U32 R11, RZ, RZ, 0x3 ;
                           ISETP.NE.AND P3, PT, R3, RZ, PT ;
                      @!P4 IMAD R11, R26, R11, 0x1 ;
                      @!P4 IMAD.WIDE R6, R11, 0x8, R6 ;
                      @!P4 STG.E.64 desc[UR8][R6.64], R8 ;
                       @P3 BRA  ;
                           S2R R4, SR_TID.X ;
                           LDC R10, c[0x0][0x29c] ;
                           SHF.L.U32 R11, R26, 0x5, RZ ;
                           BSSY B0,  ;
                           CS2R R6, SRZ ;
                           LOP3.LUT R11, R11, 0xffffffe0, R4, 0xe2, !PT ;
                           ISETP.GE.AND P3, PT, R11, R10, PT ;
                       @P3 BRA  ;
                           CS2R R6, SRZ ;
                      @!P6 BRA  ;
                           ULDC.64 UR4, c[0x0][0x218] ;
                           F2F.F64.F32 R6, R33 ;
                           ISETP.NE.U32.AND P3, PT, RZ, UR4, PT ;
                           ISETP.NE.AND.EX P3, PT, RZ, UR5, PT, P3 ;
                           DFMA R6, R6, R6, RZ ;
                      @!P3 BRA  ;
                           IADD3 R4, P3, R11, R30, RZ ;
                           ULDC.64 UR4, c[0x0][0x210] ;
                           LEA.HI.X.SX32 R9, R11, R5, 0x1, P3 ;
                           LEA R8, P3, R4, UR4, 0x2 ;
                           LEA.HI.X R9, R4, UR5, R9, 0x2, P3 ;
                           STG.E desc[UR8][R8.64], R33 ;
:
                      @!P0 BRA  ;
                           ULDC.64 UR4, c[0x0][0x218] ;
                           F2F.F64.F32 R8, R14 ;
                           ISETP.NE.U32.AND P3, PT, RZ, UR4, PT ;
                           ISETP.NE.AND.EX P3, PT, RZ, UR5, PT, P3 ;
                           DFMA R6, R8, R8, R6 ;
                      @!P3 BRA  ;
                           SHF.R.S32.HI R8, RZ, 0x1f, R11.reuse ;
                           ULDC.64 UR4, c[0x0][0x210] ;
                           IADD3 R4, P3, P6, R10, R30, R11 ;
                           IADD3.X R9, R5, UR18, R8, P3, P6 ;
                           LEA R8, P3, R4, UR4, 0x2 ;
                           LEA.HI.X R9, R4, UR5, R9, 0x2, P3 ;
                           STG.E desc[UR8][R8.64], R14 ;
:
                      @!P1 BRA  ;
                           ULDC.64 UR4, c[0x0][0x218] ;
                           F2F.F64.F32 R8, R19 ;
                           ISETP.NE.U32.AND P3, PT, RZ, UR4, PT ;
                           ISETP.NE.AND.EX P3, PT, RZ, UR5, PT, P3 ;
                           DFMA R6, R8, R8, R6 ;
                      @!P3 BRA  ;
                           SHF.R.S32.HI R8, RZ, 0x1f, R11.reuse ;
                           ULDC.64 UR4, c[0x0][0x210] ;
                           IADD3 R4, P3, P6, R30, UR19, R11 ;
                           IADD3.X R9, R5, UR20, R8, P3, P6 ;
                           LEA R8, P3, R4, UR4, 0x2 ;
                           LEA.HI.X R9, R4, UR5, R9, 0x2, P3 ;
                           STG.E desc[UR8][R8.64], R19 ;
:
                      @!P2 BRA  ;
                           ULDC.64 UR4, c[0x0][0x218] ;
                           F2F.F64.F32 R8, R15 ;
                           ISETP.NE.U32.AND P3, PT, RZ, UR4, PT ;
                           ISETP.NE.AND.EX P3, PT, RZ, UR5, PT, P3 ;
                           DFMA R6, R8, R8, R6 ;
                      @!P3 BRA  ;
                           IADD3 R8, P3, R11.reuse, R30, RZ ;
                           UIMAD UR4, UR18, 0x3, URZ ;
                           ULDC.64 UR6, c[0x0][0x210] ;
                           LEA.HI.X.SX32 R9, R11, R5, 0x1, P3 ;
                           IMAD.WIDE.U32 R8, R10, 0x3, R8 ;
                           IADD3 R9, R9, UR4, RZ ;
                           LEA R10, P3, R8, UR6, 0x2 ;
                           LEA.HI.X R11, R8, UR7, R9, 0x2, P3 ;
                           STG.E desc[UR8][R10.64], R15 ;
:
                           BSYNC B0 ;
:
                           UMOV UR4, 0xffffffff ;
                           BRA.DIV UR4,  ;
:
                           SHFL.BFLY PT, R9, R7, 0x10, 0x1f ;
:
                           SHFL.BFLY PT, R8, R6, 0x10, 0x1f ;
                           DADD R8, R8, R6 ;
:
                           SHFL.BFLY PT, R11, R9, 0x8, 0x1f ;
:
                           SHFL.BFLY PT, R10, R8, 0x8, 0x1f ;
                           IMAD.MOV.U32 R7, RZ, RZ, R11 ;
                           MOV R6, R10 ;
                           DADD R10, R8, R6 ;
:
                           SHFL.BFLY PT, R13, R11, 0x4, 0x1f ;
:
                           SHFL.BFLY PT, R12, R10, 0x4, 0x1f ;
                           MOV R7, R13 ;
                           MOV R6, R12 ;
                           DADD R12, R10, R6 ;
:
                           SHFL.BFLY PT, R7, R13, 0x2, 0x1f ;
:
                           SHFL.BFLY PT, R6, R12, 0x2, 0x1f ;
                           DADD R6, R12, R6 ;
:
                           SHFL.BFLY PT, R9, R7, 0x1, 0x1f ;
:
                           SHFL.BFLY PT, R8, R6, 0x1, 0x1f ;
:
                           ISETP.NE.AND P3, PT, R2, RZ, PT ;
                           DADD R10, R6, R8 ;
                       @P3 BRA  ;
                           S2UR UR4, SR_CTAID.Y ;
                           SHF.R.S32.HI R7, RZ, 0x1f, R26 ;
                           MOV R6, R26 ;
                           LDC R9, c[0x0][0xc] ;
                           LDC.64 R12, c[0x0][0x240] ;
                           IMAD.WIDE R6, R9, UR4, R6 ;
                           LEA R8, P3, R6, R12, 0x3 ;
                           LEA.HI.X R9, R6, R13, R7, 0x3, P3 ;
                           STG.E.64 desc[UR8][R8.64], R10 ;
:
                           WARPSYNC.ALL ;
                           BAR.SYNC.DEFER_BLOCKING 0x0 ;
                           BSSY B0,  ;
                       @P5 BRA  ;
                           S2R R11, SR_CTAID.Y ;
                           LDC.64 R6, c[0x0][0x248] ;
                           IMAD.MOV.U32 R9, RZ, RZ, 0x1 ;
                           IMAD.WIDE R6, R11, 0x4, R6 ;
                      @!PT LDS RZ, [RZ] ;
                      @!PT LDS RZ, [RZ] ;
                      @!PT LDS RZ, [RZ] ;
                      @!PT LDS RZ, [RZ] ;
                           MEMBAR.SC.GPU ;
                           ERRBAR;
                           CGAERRBAR ;
                           CCTL.IVALL ;
                           ATOMG.E.ADD.STRONG.GPU PT, R4, desc[UR8][R6.64], R9 ;
                           S2UR UR6, SR_CgaCtaId ;
                           ULDC UR4, c[0x0][0xc] ;
                           UMOV UR5, 0x400 ;
                           UIADD3 UR4, UR4, -0x1, URZ ;
                           ULEA UR5, UR6, UR5, 0x18 ;
                           ISETP.NE.AND P3, PT, R4, UR4, PT ;
                           SEL R8, RZ, 0x1, P3 ;
                           ISETP.NE.AND P3, PT, R4, UR4, PT ;
                           STS [UR5], R8 ;
                       @P3 BRA  ;
                      @!PT LDS RZ, [RZ] ;
                      @!PT LDS RZ, [RZ] ;
                      @!PT LDS RZ, [RZ] ;
                      @!PT LDS RZ, [RZ] ;
                           MEMBAR.SC.GPU ;
                           ERRBAR;
                           CGAERRBAR ;
                           CCTL.IVALL ;
                           STG.E desc[UR8][R6.64], RZ ;
:
                           BSYNC B0 ;
:
                           BAR.SYNC.DEFER_BLOCKING 0x0 ;
                      @!P4 CS2R R10, SR_GLOBALTIMERLO ;
                           S2R R4, SR_CgaCtaId ;
                           MOV R7, 0x400 ;
                      @!P4 LDC.64 R8, c[0x0][0x2b8] ;
                      @!P4 MOV R27, 0x3 ;
                      @!P4 IMAD R27, R26, R27, 0x2 ;
                      @!P4 IMAD.WIDE R8, R27, 0x8, R8 ;
                      @!P4 STG.E.64 desc[UR8][R8.64], R10 ;
                           LEA R6, R4, R7, 0x18 ;
                           LDS R6, [R6] ;
                           ISETP.NE.AND P3, PT, R6, RZ, PT ;
:
                      @!P3 EXIT ;
                           S2R R16, SR_TID.X ;
                           UISETP.NE.U32.AND UP0, UPT, UR12, URZ, UPT ;
                           IADD3 R6, R34, 0x3, RZ ;
                           UMOV UR4, URZ ;
                           UMOV UR5, URZ ;
                           UISETP.NE.AND.EX UP0, UPT, UR13, URZ, UPT, UP0 ;
                           BSSY B0,  ;
                           ULDC UR13, c[0x0][0x29c] ;
                           @UP0 ULDC UR6, c[0x0][0xc] ;
                           @UP0 ULDC.64 UR14, c[0x0][0x2b8] ;
                           @UP0 UIMAD UR6, UR6, 0x3, URZ ;
                           @UP0 UIMAD.WIDE UR4, UR6, 0x8, UR14 ;
                           ISETP.GE.AND P3, PT, R16, R6, PT ;
                       @P3 BRA  ;
                           ISETP.GE.U32.AND P3, PT, R16, 0x3, PT ;
                       @P3 LDC.64 R8, c[0x0][0x258] ;
                       @P3 IADD3 R13, R16, -0x3, RZ ;
                      @!P3 LDC.64 R10, c[0x0][0x250] ;
                       @P3 IMAD.WIDE.U32 R8, R13, 0x4, R8 ;
                      @!P3 IMAD.WIDE.U32 R8, R16, 0x4, R10 ;
                           LDG.E R8, desc[UR8][R8.64] ;
                           VIADD R11, R7, 0x16c ;
                           LEA R11, R4, R11, 0x18 ;
                           LEA R11, R16, R11, 0x2 ;
                           STS [R11], R8 ;
:
                           BSYNC B0 ;
:
                           ULOP3.LUT UP0, URZ, UR13, 0x3, URZ, 0xc0, !UPT ;
                           BSSY B0,  ;
                           ULDC UR7, c[0x0][0x2a0] ;
                           UIMAD UR7, UR7, UR13, URZ ;
                           PLOP3.LUT P3, PT, PT, PT, UP0, 0x80, 0x0 ;
                           USHF.R.S32.HI UR15, URZ, 0x1f, UR7 ;
                      @!P3 BRA  ;
                           ISETP.GE.AND P3, PT, R16, UR7, PT ;
                           BSSY B1,  ;
                       @P3 BRA  ;
                           S2R R6, SR_SWINHI ;
                           LDC R14, c[0x0][RZ] ;
                           IADD3 R9, R7, 0x1e0, RZ ;
                           MOV R15, R16 ;
                           LEA R9, R4, R9, 0x18 ;
                           LDC.64 R18, c[0x0][0x210] ;
                           MOV R8, R9 ;
                           MOV R9, R6 ;
:
                           IADD3 R6, P3, R15.reuse, R30, RZ ;
                           IMAD.WIDE R10, R15, 0x4, R8 ;
                           LEA.HI.X.SX32 R13, R15, R5, 0x1, P3 ;
                           IMAD.IADD R15, R14, 0x1, R15 ;
                           LEA R12, P3, R6.reuse, R18, 0x2 ;
                           MOV R11, R10 ;
                           LEA.HI.X R13, R6, R19, R13, 0x2, P3 ;
                           ISETP.GE.AND P3, PT, R15, UR7, PT ;
                      @!PT LDS RZ, [RZ] ;
                      @!PT LDS RZ, [RZ] ;
                      @!PT LDS RZ, [RZ] ;
                           LDGSTS.E [R11], desc[UR8][R12.64] ;
                      @!P3 BRA  ;
:
                           BSYNC B1 ;
:
                           BRA  ;
:
                           USHF.R.S32.HI UR6, URZ, 0x1f, UR7 ;
                           ULEA.HI UR6, UR6, UR7, URZ, 0x2 ;
                           USHF.R.S32.HI UR6, URZ, 0x2, UR6 ;
                           ISETP.GE.AND P3, PT, R16, UR6, PT ;
                       @P3 BRA  ;
                           S2R R8, SR_SWINHI ;
                           LDC R15, c[0x0][RZ] ;
                           IADD3 R9, R7, 0x1e0, RZ ;
                           MOV R6, R16 ;
                           LEA R9, R4, R9, 0x18 ;
                           LDC.64 R18, c[0x0][0x210] ;
                           MOV R12, R9 ;
                           MOV R13, R8 ;
:
                           SHF.L.U32 R11, R6, 0x2, RZ ;
                           IMAD.IADD R6, R15, 0x1, R6 ;
                           IADD3 R14, P3, R11.reuse, R30, RZ ;
                           IMAD.WIDE R8, R11, 0x4, R12 ;
                           LEA.HI.X.SX32 R11, R11, R5, 0x1, P3 ;
                           LEA R10, P3, R14.reuse, R18, 0x2 ;
                           MOV R9, R8 ;
                           LEA.HI.X R11, R14, R19, R11, 0x2, P3 ;
                           ISETP.GE.AND P3, PT, R6, UR6, PT ;
                      @!PT LDS RZ, [RZ] ;
                      @!PT LDS RZ, [RZ] ;
                      @!PT LDS RZ, [RZ] ;
                           LDGSTS.E.BYPASS.128 [R9], desc[UR8][R10.64] ;
                      @!P3 BRA  ;
:
                           BSYNC B0 ;
:
                           ISETP.GE.AND P3, PT, R16, UR13, PT ;
                           BSSY B0,  ;
                       @P3 BRA  ;
                           S2R R6, SR_SWINHI ;
                           LDC R12, c[0x0][RZ] ;
                           IADD3 R7, R7, 0x1e0, RZ ;
                           MOV R13, R16 ;
                           LEA R7, R4, R7, 0x18 ;
                           LDC.64 R8, c[0x0][0x260] ;
                           MOV R10, R7 ;
                           MOV R11, R6 ;
:
                           IADD3 R5, P3, R13, UR7, RZ ;
                           LEA.HI.X.SX32 R4, R13, UR15, 0x1, P3 ;
                           LEA R6, P3, R5, R10, 0x2 ;
                           LEA.HI.X R7, R5, R11, R4, 0x2, P3 ;
                           IMAD.WIDE R4, R13, 0x4, R8 ;
                           IADD3 R13, R12, R13, RZ ;
                           MOV R7, R6 ;
                           ISETP.GE.AND P3, PT, R13, UR13, PT ;
                      @!PT LDS RZ, [RZ] ;
                      @!PT LDS RZ, [RZ] ;
                      @!PT LDS RZ, [RZ] ;
                           LDGSTS.E [R7], desc[UR8][R4.64] ;
                      @!P3 BRA  ;
:
                           BSYNC B0 ;
:
                           ISETP.GT.AND P3, PT, R3, R34, PT ;
                           LDGDEPBAR ;
                           BSSY B2,  ;
                       @P3 BRA  ;
                           S2UR UR6, SR_CTAID.Y ;
                           LOP3.LUT R29, R2.reuse, 0x20, RZ, 0xfc, !PT ;
                           ULDC.64 UR12, c[0x0][0x240] ;
                           SHF.R.S32.HI R5, RZ, 0x1f, R34 ;
                           IMAD.U32 R30, RZ, RZ, UR7 ;
                           LOP3.LUT R31, R2.reuse, 0x40, RZ, 0xfc, !PT ;
                           IMAD.MOV.U32 R18, RZ, RZ, RZ ;
                           LOP3.LUT R28, RZ, R2, RZ, 0x33, !PT ;
                           LDC R27, c[0x0][0xc] ;
                           LOP3.LUT R35, R2, 0x60, RZ, 0xfc, !PT ;
                           IADD3 R30, R30, -0x1, RZ ;
                           LDC R26, c[0x0][RZ] ;
                           IMAD.WIDE R6, R27, UR6, RZ ;
                           UFLO.U32 UR6, UR7 ;
                           IADD3 R28, R28, R27, RZ ;
                           IMAD R10, R7, R34, RZ ;
                           IADD3 R4, P3, R2, R6, RZ ;
                           UIADD3 UR6, -UR6, 0x3ff, URZ ;
                           IADD3 R11, P4, R6.reuse, R29, RZ ;
                           IMAD R33, R6, R5, R10 ;
                           LEA.HI R32, R28, 0x1, RZ, 0x1b ;
                           IMAD.X R9, RZ, RZ, R7, P3 ;
                           LEA R8, P3, R4, UR12, 0x3 ;
                           USHF.L.U32 UR6, UR6, 0x14, URZ ;
                           IADD3.X R14, RZ, R7, RZ, P4, !PT ;
                           IMAD.WIDE.U32 R16, R6, R34, RZ ;
                           LEA.HI.X R9, R4, UR13, R9, 0x3, P3 ;
                           LEA R10, P3, R11.reuse, UR12, 0x3 ;
                           IADD3 R4, P5, R6, R31, RZ ;
                           LEA.HI.X R11, R11, UR13, R14, 0x3, P3 ;
                           I2F.F64 R14, UR7 ;
                           IADD3.X R5, RZ, R7, RZ, P5, !PT ;
                           LEA R12, P4, R4, UR12, 0x3 ;
                           LOP3.LUT R32, R32, 0x3, RZ, 0xc0, !PT ;
                           LEA.HI.X R13, R4, UR13, R5, 0x3, P4 ;
                           MOV R19, UR6 ;
                           IADD3 R33, R17, R33, RZ ;
:
                           YIELD ;
                           ULDC UR6, c[0x0][0x298] ;
                           BSSY B1,  ;
                           ISETP.GE.AND P3, PT, R3, UR6, PT ;
                      @!P3 BRA  ;
                           ISETP.GE.AND P3, PT, R2, R27, PT ;
                           BSSY B0,  ;
                           CS2R R4, SRZ ;
                       @P3 BRA  ;
                           ISETP.NE.AND P3, PT, R32, RZ, PT ;
                           BSSY B3,  ;
                           ISETP.GE.U32.AND P4, PT, R28, 0x60, PT ;
                           CS2R R4, SRZ ;
                           MOV R37, R2 ;
                      @!P3 BRA  ;
                           LDG.E.64.STRONG.GPU R4, desc[UR8][R8.64] ;
                           ISETP.NE.AND P3, PT, R32, 0x1, PT ;
                           MOV R37, R29 ;
                           DADD R4, RZ, R4 ;
                      @!P3 BRA  ;
                           ISETP.NE.AND P3, PT, R32, 0x2, PT ;
                           LDG.E.64.STRONG.GPU R20, desc[UR8][R10.64] ;
                       @P3 LDG.E.64.STRONG.GPU R22, desc[UR8][R12.64] ;
                           MOV R37, R31 ;
                       @P3 IMAD.MOV.U32 R37, RZ, RZ, R35 ;
                           DADD R4, R4, R20 ;
                       @P3 DADD R4, R4, R22 ;
:
                           BSYNC B3 ;
:
                      @!P4 BRA  ;
:
                           IADD3 R21, P3, R6, R37, RZ ;
                           YIELD ;
                           ULDC.64 UR12, c[0x0][0x240] ;
                           LEA.HI.X.SX32 R22, R37.reuse, R7, 0x1, P3 ;
                           IADD3 R23, R37, 0x20, RZ ;
                           LEA R20, P3, R21, UR12, 0x3 ;
                           IADD3 R24, P4, R6, R23, RZ ;
                           LEA.HI.X R21, R21, UR13, R22, 0x3, P3 ;
                           IADD3 R25, R37, 0x40, RZ ;
                           LEA.HI.X.SX32 R23, R23, R7, 0x1, P4 ;
                           LEA R22, P3, R24, UR12, 0x3 ;
                           LDG.E.64.STRONG.GPU R20, desc[UR8][R20.64] ;
                           IADD3 R36, P4, R6, R25, RZ ;
                           LEA.HI.X R23, R24, UR13, R23, 0x3, P3 ;
                           IADD3 R39, R37, 0x60, RZ ;
                           LEA.HI.X.SX32 R25, R25, R7, 0x1, P4 ;
                           LEA R24, P3, R36, UR12, 0x3 ;
                           LDG.E.64.STRONG.GPU R22, desc[UR8][R22.64] ;
                           IADD3 R34, P4, R6, R39, RZ ;
                           LEA.HI.X R25, R36, UR13, R25, 0x3, P3 ;
                           LEA.HI.X.SX32 R39, R39, R7, 0x1, P4 ;
                           LEA R38, P3, R34.reuse, UR12, 0x3 ;
                           LDG.E.64.STRONG.GPU R24, desc[UR8][R24.64] ;
                           LEA.HI.X R39, R34, UR13, R39, 0x3, P3 ;
                           LDG.E.64.STRONG.GPU R38, desc[UR8][R38.64] ;
                           VIADD R37, R37, 0x80 ;
                           ISETP.GE.AND P3, PT, R37, R27, PT ;
                           DADD R20, R20, R4 ;
                           DADD R20, R20, R22 ;
                           DADD R20, R20, R24 ;
                           DADD R4, R20, R38 ;
                      @!P3 BRA  ;
:
                           BSYNC B0 ;
:
                           UMOV UR6, 0xffffffff ;
                           BRA.DIV UR6,  ;
:
                           SHFL.BFLY PT, R37, R5, 0x10, 0x1f ;
:
                           SHFL.BFLY PT, R36, R4, 0x10, 0x1f ;
                           MOV R21, R37 ;
                           MOV R20, R36 ;
                           DADD R36, R20, R4 ;
:
                           SHFL.BFLY PT, R39, R37, 0x8, 0x1f ;
:
                           SHFL.BFLY PT, R38, R36, 0x8, 0x1f ;
                           IMAD.MOV.U32 R5, RZ, RZ, R39 ;
                           MOV R4, R38 ;
                           DADD R38, R36, R4 ;
:
                           SHFL.BFLY PT, R41, R39, 0x4, 0x1f ;
:
                           SHFL.BFLY PT, R40, R38, 0x4, 0x1f ;
                           MOV R5, R41 ;
                           MOV R4, R40 ;
                           DADD R40, R38, R4 ;
:
                           SHFL.BFLY PT, R5, R41, 0x2, 0x1f ;
:
                           SHFL.BFLY PT, R4, R40, 0x2, 0x1f ;
                           DADD R4, R40, R4 ;
:
                           SHFL.BFLY PT, R25, R5, 0x1, 0x1f ;
:
                           SHFL.BFLY PT, R24, R4, 0x1, 0x1f ;
:
                           ISETP.NE.AND P3, PT, R2, RZ, PT ;
                           IMAD.MOV.U32 R21, RZ, RZ, R25 ;
                           MOV R20, R24 ;
                           DADD R20, R4, R20 ;
                       @P3 BRA  ;
                           LOP3.LUT P3, RZ, R30, UR7, RZ, 0xc0, !PT ;
                      @!P3 BRA  ;
                           MUFU.RCP64H R5, R15 ;
                           MOV R4, 0x1 ;
                           BSSY B0,  ;
                           FSETP.GEU.AND P4, PT, |R21|, 6.5827683646048100446e-37, PT ;
                           DFMA R22, -R14, R4, 1 ;
                           DFMA R22, R22, R22, R22 ;
                           DFMA R22, R4, R22, R4 ;
                           DFMA R4, -R14, R22, 1 ;
                           DFMA R4, R22, R4, R22 ;
                           DMUL R22, R20, R4 ;
                           DFMA R24, -R14, R22, R20 ;
                           DFMA R4, R4, R24, R22 ;
                           FFMA R22, RZ, R15, R5 ;
                           FSETP.GT.AND P3, PT, |R22|, 1.469367938527859385e-39, PT ;
                       @P3 BRA P4,  ;
                           MOV R22, R20 ;
                           IMAD.MOV.U32 R20, RZ, RZ, R14 ;
                           MOV R23, R21 ;
                           MOV R21, R15 ;
                           MOV R34, 0x3940 ;
                           CALL.REL.NOINC  ;
                           MOV R4, R38 ;
                           MOV R5, R39 ;
:
                           BSYNC B0 ;
:
                           BRA  ;
:
                           DMUL R4, R18, R20 ;
:
                           F2F.F32.F64 R4, R4 ;
                           ULDC UR6, c[0x0][0x2ac] ;
                           BSSY B0,  ;
                           FADD R21, R4, UR6 ;
                           VIADD R20, R21, 0xf3000000 ;
                           MUFU.RSQ R22, R21 ;
                           ISETP.GT.U32.AND P3, PT, R20, 0x727fffff, PT ;
                      @!P3 BRA  ;
                           MOV R4, R21 ;
                           MOV R24, 0x3a40 ;
                           CALL.REL.NOINC  ;
                           MOV R4, R20 ;
                           BRA  ;
:
                           FMUL.FTZ R4, R21, R22 ;
                           FMUL.FTZ R20, R22, 0.5 ;
                           FFMA R5, -R4, R4, R21 ;
                           FFMA R4, R5, R20, R4 ;
:
                           BSYNC B0 ;
:
                           IADD3 R5, R4, 0x1800000, RZ ;
                           BSSY B3,  ;
                           LOP3.LUT R5, R5, 0x7f800000, RZ, 0xc0, !PT ;
                           ISETP.GT.U32.AND P3, PT, R5, 0x1ffffff, PT ;
                       @P3 BRA  ;
                           MOV R20, 0x3b20 ;
                           CALL.REL.NOINC  ;
                           BRA  ;
:
                           MUFU.RCP R5, R4 ;
                           FFMA R20, R5, R4, -1 ;
                           FADD.FTZ R20, -R20, -RZ ;
                           FFMA R4, R5, R20, R5 ;
:
                           BSYNC B3 ;
:
                           S2UR UR12, SR_CgaCtaId ;
                           UMOV UR6, 0x400 ;
                           ULEA UR6, UR12, UR6, 0x18 ;
                           STS [UR6+0x168], R4 ;
                           BRA  ;
:
                           ISETP.GE.AND P4, PT, R2, R27, PT ;
                           IMAD R23, R27, R3, RZ ;
                           BSSY B0,  ;
                           IMAD.MOV.U32 R34, RZ, RZ, RZ ;
                           IADD3 R22, P3, R23, R16, RZ ;
                           LEA.HI.X.SX32 R23, R23, R33, 0x1, P3 ;
                       @P4 BRA  ;
                           ISETP.NE.AND P4, PT, R32, RZ, PT ;
                           BSSY B3,  ;
                           HFMA2.MMA R34, -RZ, RZ, 0, 0 ;
                           ISETP.GE.U32.AND P3, PT, R28, 0x60, PT ;
                           MOV R38, R2 ;
                      @!P4 BRA  ;
                           LDC.64 R4, c[0x0][0x238] ;
                           IADD3 R21, P4, R2, R22, RZ ;
                           IADD3.X R24, RZ, R23, RZ, P4, !PT ;
                           LEA R20, P4, R21, R4, 0x2 ;
                           LEA.HI.X R21, R21, R5, R24, 0x2, P4 ;
                           LDG.E.STRONG.GPU R20, desc[UR8][R20.64] ;
                           ISETP.NE.AND P4, PT, R32, 0x1, PT ;
                           IMAD.MOV.U32 R38, RZ, RZ, R29 ;
                           FADD R34, RZ, R20 ;
                      @!P4 BRA  ;
                           ISETP.NE.AND P4, PT, R32, 0x2, PT ;
                           IADD3 R21, P5, R29, R22, RZ ;
                           IADD3.X R36, RZ, R23, RZ, P5, !PT ;
                           LEA R20, P6, R21, R4, 0x2 ;
                           LEA.HI.X R21, R21, R5, R36, 0x2, P6 ;
                       @P4 IADD3 R24, P5, R31, R22, RZ ;
                       @P4 LEA R4, P6, R24, R4, 0x2 ;
                           LDG.E.STRONG.GPU R21, desc[UR8][R20.64] ;
                       @P4 IADD3.X R25, RZ, R23, RZ, P5, !PT ;
                       @P4 LEA.HI.X R5, R24, R5, R25, 0x2, P6 ;
                       @P4 LDG.E.STRONG.GPU R5, desc[UR8][R4.64] ;
                           MOV R38, R31 ;
                       @P4 IMAD.MOV.U32 R38, RZ, RZ, R35 ;
                           FADD R34, R34, R21 ;
                       @P4 FADD R34, R34, R5 ;
:
                           BSYNC B3 ;
:
                      @!P3 BRA  ;
:
                           IADD3 R20, P3, R38.reuse, R22, RZ ;
                           YIELD ;
                           IADD3 R4, R38.reuse, 0x20, RZ ;
                           ULDC.64 UR12, c[0x0][0x238] ;
                           LEA.HI.X.SX32 R25, R38, R23, 0x1, P3 ;
                           LEA R36, P3, R20, UR12, 0x2 ;
                           IADD3 R5, R38, 0x40, RZ ;
                           IADD3 R21, P4, R4, R22.reuse, RZ ;
                           LEA.HI.X R37, R20, UR13, R25, 0x2, P3 ;
                           IADD3 R39, P5, R5, R22, RZ ;
                           LEA.HI.X.SX32 R42, R4, R23, 0x1, P4 ;
                           LEA R20, P3, R21, UR12, 0x2 ;
                           LDG.E.STRONG.GPU R37, desc[UR8][R36.64] ;
                           IADD3 R24, R38, 0x60, RZ ;
                           LEA.HI.X.SX32 R40, R5, R23.reuse, 0x1, P5 ;
                           LEA R4, P4, R39, UR12, 0x2 ;
                           LEA.HI.X R21, R21, UR13, R42, 0x2, P3 ;
                           IADD3 R25, P3, R24.reuse, R22, RZ ;
                           LEA.HI.X R5, R39, UR13, R40, 0x2, P4 ;
                           LEA.HI.X.SX32 R40, R24, R23, 0x1, P3 ;
                           LDG.E.STRONG.GPU R21, desc[UR8][R20.64] ;
                           LEA R24, P3, R25, UR12, 0x2 ;
                           LDG.E.STRONG.GPU R5, desc[UR8][R4.64] ;
                           LEA.HI.X R25, R25, UR13, R40, 0x2, P3 ;
                           LDG.E.STRONG.GPU R25, desc[UR8][R24.64] ;
                           VIADD R38, R38, 0x80 ;
                           ISETP.GE.AND P3, PT, R38, R27, PT ;
                           FADD R34, R37, R34 ;
                           FADD R34, R34, R21 ;
                           FADD R34, R34, R5 ;
                           FADD R34, R34, R25 ;
                      @!P3 BRA  ;
:
                           BSYNC B0 ;
:
                           UMOV UR6, 0xffffffff ;
                           BRA.DIV UR6,  ;
:
                           SHFL.BFLY PT, R24, R34, 0x10, 0x1f ;
                           FADD R23, R24, R34 ;
:
                           SHFL.BFLY PT, R24, R23, 0x8, 0x1f ;
                           FADD R4, R23, R24 ;
:
                           SHFL.BFLY PT, R24, R4, 0x4, 0x1f ;
                           FADD R5, R4, R24 ;
:
                           SHFL.BFLY PT, R24, R5, 0x2, 0x1f ;
                           FADD R25, R5, R24 ;
:
                           SHFL.BFLY PT, R24, R25, 0x1, 0x1f ;
:
                           ISETP.NE.AND P3, PT, R2, RZ, PT ;
                           FADD R25, R25, R24 ;
                      @!P3 S2R R5, SR_CgaCtaId ;
                      @!P3 MOV R4, 0x400 ;
                      @!P3 IADD3 R4, R4, 0x108, RZ ;
                      @!P3 LEA R4, R5, R4, 0x18 ;
                      @!P3 LEA R4, R3, R4, 0x2 ;
                      @!P3 STS [R4], R25 ;
:
                           BSYNC B1 ;
:
                           ULDC UR6, c[0x0][0x298] ;
                           LEA.HI R3, R26, R3, RZ, 0x1b ;
                           MOV R34, UR6 ;
                           ISETP.GT.AND P3, PT, R3, R34, PT ;
                      @!P3 BRA  ;
:
                           BSYNC B2 ;
:
                           S2R R3, SR_TID.X ;
                           DEPBAR.LE SB0, 0x0 ;
                           WARPSYNC.ALL ;
                           BAR.SYNC.DEFER_BLOCKING 0x0 ;
                           ISETP.NE.U32.AND P3, PT, RZ, UR4, PT ;
                           ISETP.NE.AND.EX P4, PT, RZ, UR5, PT, P3 ;
                           P2R R27, PR, RZ, 0x10 ;
                           ISETP.NE.OR P3, PT, R3, RZ, !P4 ;
                      @!P3 CS2R R4, SR_GLOBALTIMERLO ;
                           S2UR UR16, SR_CgaCtaId ;
                           UMOV UR17, 0x400 ;
                           IMAD.U32 R8, RZ, RZ, UR4 ;
                           MOV R9, UR5 ;
                           ULDC UR6, c[0x0][0x2a0] ;
                           SHF.R.U32.HI R3, RZ, 0x5, R3 ;
                           BSSY B2,  ;
                           MOV R21, UR6 ;
                      @!P3 STG.E.64 desc[UR8][R8.64], R4 ;
                           ISETP.GE.AND P3, PT, R21, R34, PT ;
                           ISETP.NE.OR P3, PT, R3, RZ, P3 ;
                           ULEA UR18, UR16, UR17, 0x18 ;
                           LDS R6, [UR18+0x168] ;
                       @P3 BRA  ;
                           ISETP.GE.AND P3, PT, R2, R21, PT ;
                           BSSY B3,  ;
                       @P3 BRA  ;
                           UIADD3 UR6, UR17, 0x108, URZ ;
                           IADD3 R21, R2, R21, RZ ;
                           UIADD3 UR12, UR17, 0x16c, URZ ;
                           LDS R4, [UR18+0x170] ;
                           ULEA UR6, UR16, UR6, 0x18 ;
                           BSSY B4,  ;
                           ULEA UR12, UR16, UR12, 0x18 ;
                           VIADD R3, R21, 0x3 ;
                           LEA R21, R21, UR6, 0x2 ;
                           LEA R5, R3, UR12, 0x2 ;
                           LDS R21, [R21] ;
                           LDS R8, [R5] ;
                           FMUL R3, R6, R21 ;
                           FFMA R3, R3, R4, R8 ;
                           FSETP.GE.AND P3, PT, R3, RZ, PT ;
                      @!P3 BRA  ;
                           HFMA2.MMA R4, -RZ, RZ, 0.96630859375, -0.0022525787353515625 ;
                           MOV R5, 0x437c0000 ;
                           BSSY B1,  ;
                           FFMA.SAT R4, -R3, R4, 0.5 ;
                           FFMA.RM R4, R4, R5, 12582913 ;
                           FADD R8, R4.reuse, -12583039 ;
                           SHF.L.U32 R4, R4, 0x17, RZ ;
                           FFMA R8, -R3, 1.4426950216293334961, -R8 ;
                           FFMA R8, -R3, 1.925963033500011079e-08, R8 ;
                           MUFU.EX2 R3, R8 ;
                           FFMA R4, R4, R3, 1 ;
                           VIADD R3, R4, 0x1800000 ;
                           LOP3.LUT R3, R3, 0x7f800000, RZ, 0xc0, !PT ;
                           ISETP.GT.U32.AND P3, PT, R3, 0x1ffffff, PT ;
                       @P3 BRA  ;
                           MOV R20, 0x45b0 ;
                           CALL.REL.NOINC  ;
                           MOV R3, R4 ;
                           BRA  ;
:
                           MUFU.RCP R3, R4 ;
                           FFMA R5, R4, R3, -1 ;
                           FADD.FTZ R8, -R5, -RZ ;
                           FFMA R3, R3, R8, R3 ;
:
                           BSYNC B1 ;
:
                           BRA  ;
:
                           HFMA2.MMA R4, -RZ, RZ, 0.96630859375, -0.0022525787353515625 ;
                           MOV R5, 0x437c0000 ;
                           BSSY B5,  ;
                           FFMA.SAT R4, R3, R4, 0.5 ;
                           FFMA.RM R4, R4, R5, 12582913 ;
                           FADD R8, R4, -12583039 ;
                           FFMA R8, R3, 1.4426950216293334961, -R8 ;
                           FFMA R8, R3, 1.925963033500011079e-08, R8 ;
                           IMAD.SHL.U32 R3, R4, 0x800000, RZ ;
                           MUFU.EX2 R8, R8 ;
                           FMUL R3, R3, R8 ;
                           FADD R5, R3, 1 ;
                           MUFU.RCP R4, R5 ;
                           FCHK P3, R3, R5 ;
                           FFMA R7, -R5, R4, 1 ;
                           FFMA R4, R4, R7, R4 ;
                           FFMA R7, R3, R4, RZ ;
                           FFMA R9, -R5, R7, R3 ;
                           FFMA R4, R4, R9, R7 ;
                      @!P3 BRA  ;
                           MOV R4, R3 ;
                           MOV R18, 0x47a0 ;
                           CALL.REL.NOINC  ;
                           MOV R4, R21 ;
:
                           BSYNC B5 ;
:
                           MOV R3, R4 ;
:
                           BSYNC B4 ;
:
                           S2UR UR6, SR_CTAID.Y ;
                           ULDC UR12, c[0x0][0x2a0] ;
                           FADD R3, R3, R3 ;
                           IMAD.U32 R21, RZ, RZ, UR12 ;
                           LDC.64 R4, c[0x0][0x268] ;
                           IMAD R7, R21, UR6, R2 ;
                           IMAD.WIDE R4, R7, 0x4, R4 ;
                           STG.E desc[UR8][R4.64], R3 ;
:
                           BSYNC B3 ;
:
                           ULDC.64 UR12, c[0x0][0x290] ;
                           ISETP.NE.U32.AND P3, PT, RZ, UR12, PT ;
                           ISETP.NE.AND.EX P3, PT, RZ, UR13, PT, P3 ;
                      @!P3 BRA  ;
                           IMAD R3, R21, R21, RZ ;
                           ISETP.NE.AND P5, PT, R27, RZ, PT ;
                           BSSY B0,  ;
                           ISETP.GE.U32.AND P4, PT, R2.reuse, R3, PT ;
                           ISETP.NE.OR P3, PT, R2, RZ, !P5 ;
                       @P4 BRA  ;
                           S2UR UR13, SR_CgaCtaId ;
                           UMOV UR6, 0x400 ;
                           LEA R4, R21, R2, 0x1 ;
                           UIADD3 UR12, UR6, 0x108, URZ ;
                           UIADD3 UR14, UR6, 0x16c, URZ ;
                           IADD3 R5, R4, 0x3, RZ ;
                           ULEA UR12, UR13, UR12, 0x18 ;
                           ULEA UR14, UR13, UR14, 0x18 ;
                           ULEA UR6, UR13, UR6, 0x18 ;
                           LEA R7, R4, UR12, 0x2 ;
                           LEA R9, R5, UR14, 0x2 ;
                           LDC.64 R4, c[0x0][0x290] ;
                           LDS R7, [R7] ;
                           LDS R8, [UR6+0x174] ;
                           S2UR UR6, SR_CTAID.Y ;
                           LDS R10, [R9] ;
                           IMAD R11, R3, UR6, R2 ;
                           IMAD.WIDE R4, R11, 0x4, R4 ;
                           FMUL R3, R6, R7 ;
                           FFMA R3, R3, R8, R10 ;
                           STG.E desc[UR8][R4.64], R3 ;
:
                           BSYNC B0 ;
:
                      @!P3 CS2R R4, SR_GLOBALTIMERLO ;
                           MOV R8, UR4 ;
                           IMAD.U32 R9, RZ, RZ, UR5 ;
                      @!P3 STG.E.64 desc[UR8][R8.64+0x8], R4 ;
:
                           BSYNC B2 ;
:
                           S2R R4, SR_CgaCtaId ;
                           MOV R3, 0x400 ;
                           ULDC.64 UR12, c[0x0][0x290] ;
                           ISETP.GE.AND P4, PT, R21, 0x1, PT ;
                           ULDC UR6, c[0x0][0x298] ;
                           ISETP.NE.U32.AND P3, PT, RZ, UR12, PT ;
                           BSSY B2,  ;
                           HFMA2.MMA R12, -RZ, RZ, 0, 0 ;
                           MOV R11, RZ ;
                           ISETP.NE.AND.EX P3, PT, RZ, UR13, PT, P3 ;
                           ISETP.LT.AND P3, PT, R21, UR6, !P3 ;
                           P2R R8, PR, RZ, 0x8 ;
                           LEA R5, R4, R3, 0x18 ;
                           LDS R7, [R5+0x16c] ;
                      @!P4 BRA  ;
                           LDS R3, [R5+0x108] ;
                           LDS R10, [R5+0x178] ;
                           FMUL R4, R6, R3 ;
                           FFMA R4, R7, R4, R10 ;
                           FSETP.GE.AND P3, PT, R4, RZ, PT ;
                      @!P3 BRA  ;
                           HFMA2.MMA R3, -RZ, RZ, 0.96630859375, -0.0022525787353515625 ;
                           IMAD.MOV.U32 R10, RZ, RZ, 0x437c0000 ;
                           FFMA.SAT R3, -R4, R3, 0.5 ;
                           FFMA.RM R3, R3, R10, 12582913 ;
                           FADD R5, R3.reuse, -12583039 ;
                           SHF.L.U32 R3, R3, 0x17, RZ ;
                           FFMA R5, -R4, 1.4426950216293334961, -R5 ;
                           FFMA R5, -R4, 1.925963033500011079e-08, R5 ;
                           MUFU.EX2 R4, R5 ;
                           FFMA R4, R3, R4, 1 ;
                           IADD3 R3, R4, 0x1800000, RZ ;
                           LOP3.LUT R3, R3, 0x7f800000, RZ, 0xc0, !PT ;
                           ISETP.GT.U32.AND P3, PT, R3, 0x1ffffff, PT ;
                       @P3 BRA  ;
                           MOV R20, 0x4d10 ;
                           CALL.REL.NOINC  ;
                           BRA  ;
:
                           MUFU.RCP R3, R4 ;
                           FFMA R5, R4, R3, -1 ;
                           FADD.FTZ R10, -R5, -RZ ;
                           FFMA R4, R3, R10, R3 ;
                           BRA  ;
:
                           MOV R3, 0x3bbb989d ;
                           IMAD.MOV.U32 R10, RZ, RZ, 0x437c0000 ;
                           FFMA.SAT R3, R4, R3, 0.5 ;
                           FFMA.RM R3, R3, R10, 12582913 ;
                           FADD R5, R3.reuse, -12583039 ;
                           SHF.L.U32 R3, R3, 0x17, RZ ;
                           FFMA R5, R4, 1.4426950216293334961, -R5 ;
                           FFMA R5, R4, 1.925963033500011079e-08, R5 ;
                           MUFU.EX2 R4, R5 ;
                           FMUL R3, R3, R4 ;
                           FADD R10, R3, 1 ;
                           MUFU.RCP R9, R10 ;
                           FCHK P3, R3, R10 ;
                           FFMA R4, -R10, R9, 1 ;
                           FFMA R4, R9, R4, R9 ;
                           FFMA R9, R3, R4, RZ ;
                           FFMA R11, -R10, R9, R3 ;
                           FFMA R4, R4, R11, R9 ;
                      @!P3 BRA  ;
                           MOV R4, R3 ;
                           MOV R5, R10 ;
                           MOV R18, 0x4ee0 ;
                           CALL.REL.NOINC  ;
                           IMAD.MOV.U32 R4, RZ, RZ, R21 ;
:
                           ULDC UR6, c[0x0][0x2b0] ;
                           FADD R11, R4, UR6 ;
:
                           BSYNC B2 ;
:
                      @!P0 BRA  ;
                           S2UR UR12, SR_CgaCtaId ;
                           UMOV UR6, 0x400 ;
                           ULEA UR6, UR12, UR6, 0x18 ;
                           LDS R3, [UR6+0x10c] ;
                           LDS R10, [UR6+0x17c] ;
                           FMUL R4, R6, R3 ;
                           FFMA R4, R7, R4, R10 ;
                           FSETP.GE.AND P3, PT, R4, RZ, PT ;
                      @!P3 BRA  ;
                           HFMA2.MMA R3, -RZ, RZ, 0.96630859375, -0.0022525787353515625 ;
                           MOV R10, 0x437c0000 ;
                           FFMA.SAT R3, -R4, R3, 0.5 ;
                           FFMA.RM R3, R3, R10, 12582913 ;
                           FADD R5, R3.reuse, -12583039 ;
                           SHF.L.U32 R3, R3, 0x17, RZ ;
                           FFMA R5, -R4, 1.4426950216293334961, -R5 ;
                           FFMA R5, -R4, 1.925963033500011079e-08, R5 ;
                           MUFU.EX2 R4, R5 ;
                           FFMA R4, R3, R4, 1 ;
                           VIADD R3, R4, 0x1800000 ;
                           LOP3.LUT R3, R3, 0x7f800000, RZ, 0xc0, !PT ;
                           ISETP.GT.U32.AND P3, PT, R3, 0x1ffffff, PT ;
                       @P3 BRA  ;
                           MOV R20, 0x50c0 ;
                           CALL.REL.NOINC  ;
                           BRA  ;
:
                           MUFU.RCP R3, R4 ;
                           FFMA R5, R4, R3, -1 ;
                           FADD.FTZ R10, -R5, -RZ ;
                           FFMA R4, R3, R10, R3 ;
                           BRA  ;
:
                           HFMA2.MMA R3, -RZ, RZ, 0.96630859375, -0.0022525787353515625 ;
                           MOV R10, 0x437c0000 ;
                           FFMA.SAT R3, R4, R3, 0.5 ;
                           FFMA.RM R3, R3, R10, 12582913 ;
                           FADD R5, R3.reuse, -12583039 ;
                           SHF.L.U32 R3, R3, 0x17, RZ ;
                           FFMA R5, R4, 1.4426950216293334961, -R5 ;
                           FFMA R5, R4, 1.925963033500011079e-08, R5 ;
                           MUFU.EX2 R4, R5 ;
                           FMUL R3, R3, R4 ;
                           FADD R10, R3, 1 ;
                           MUFU.RCP R9, R10 ;
                           FCHK P3, R3, R10 ;
                           FFMA R4, -R10, R9, 1 ;
                           FFMA R4, R9, R4, R9 ;
                           FFMA R9, R3, R4, RZ ;
                           FFMA R12, -R10, R9, R3 ;
                           FFMA R4, R4, R12, R9 ;
                      @!P3 BRA  ;
                           IMAD.MOV.U32 R4, RZ, RZ, R3 ;
                           MOV R5, R10 ;
                           MOV R18, 0x5290 ;
                           CALL.REL.NOINC  ;
                           MOV R4, R21 ;
:
                           ULDC UR6, c[0x0][0x2b0] ;
                           FADD R12, R4, UR6 ;
:
                           HFMA2.MMA R14, -RZ, RZ, 0, 0 ;
                           IMAD.MOV.U32 R13, RZ, RZ, RZ ;
                      @!P1 BRA  ;
                           S2UR UR12, SR_CgaCtaId ;
                           UMOV UR6, 0x400 ;
                           ULEA UR6, UR12, UR6, 0x18 ;
                           LDS R3, [UR6+0x110] ;
                           LDS R10, [UR6+0x180] ;
                           FMUL R4, R6, R3 ;
                           FFMA R4, R7, R4, R10 ;
                           FSETP.GE.AND P3, PT, R4, RZ, PT ;
                      @!P3 BRA  ;
                           HFMA2.MMA R10, -RZ, RZ, 3.7421875, 0 ;
                           MOV R3, 0x3bbb989d ;
                           FFMA.SAT R3, -R4, R3, 0.5 ;
                           FFMA.RM R3, R3, R10, 12582913 ;
                           FADD R5, R3.reuse, -12583039 ;
                           SHF.L.U32 R3, R3, 0x17, RZ ;
                           FFMA R5, -R4, 1.4426950216293334961, -R5 ;
                           FFMA R5, -R4, 1.925963033500011079e-08, R5 ;
                           MUFU.EX2 R4, R5 ;
                           FFMA R4, R3, R4, 1 ;
                           VIADD R3, R4, 0x1800000 ;
                           LOP3.LUT R3, R3, 0x7f800000, RZ, 0xc0, !PT ;
                           ISETP.GT.U32.AND P3, PT, R3, 0x1ffffff, PT ;
                       @P3 BRA  ;
                           MOV R20, 0x5480 ;
                           CALL.REL.NOINC  ;
                           BRA  ;
:
                           MUFU.RCP R3, R4 ;
                           FFMA R5, R4, R3, -1 ;
                           FADD.FTZ R10, -R5, -RZ ;
                           FFMA R4, R3, R10, R3 ;
                           BRA  ;
:
                           HFMA2.MMA R10, -RZ, RZ, 3.7421875, 0 ;
                           MOV R3, 0x3bbb989d ;
                           FFMA.SAT R3, R4, R3, 0.5 ;
                           FFMA.RM R3, R3, R10, 12582913 ;
                           FADD R5, R3.reuse, -12583039 ;
                           SHF.L.U32 R3, R3, 0x17, RZ ;
                           FFMA R5, R4, 1.4426950216293334961, -R5 ;
                           FFMA R5, R4, 1.925963033500011079e-08, R5 ;
                           MUFU.EX2 R4, R5 ;
                           FMUL R3, R3, R4 ;
                           FADD R10, R3, 1 ;
                           MUFU.RCP R9, R10 ;
                           FCHK P3, R3, R10 ;
                           FFMA R4, -R10, R9, 1 ;
                           FFMA R4, R9, R4, R9 ;
                           FFMA R9, R3, R4, RZ ;
                           FFMA R13, -R10, R9, R3 ;
                           FFMA R4, R4, R13, R9 ;
                      @!P3 BRA  ;
                           IMAD.MOV.U32 R4, RZ, RZ, R3 ;
                           MOV R5, R10 ;
                           MOV R18, 0x5650 ;
                           CALL.REL.NOINC  ;
                           MOV R4, R21 ;
:
                           ULDC UR6, c[0x0][0x2b0] ;
                           FADD R13, R4, UR6 ;
:
                      @!P2 BRA  ;
                           S2UR UR12, SR_CgaCtaId ;
                           UMOV UR6, 0x400 ;
                           ULEA UR6, UR12, UR6, 0x18 ;
                           LDS R3, [UR6+0x114] ;
                           LDS R4, [UR6+0x184] ;
                           FMUL R6, R6, R3 ;
                           FFMA R4, R7, R6, R4 ;
                           FSETP.GE.AND P3, PT, R4, RZ, PT ;
                      @!P3 BRA  ;
                           HFMA2.MMA R3, -RZ, RZ, 0.96630859375, -0.0022525787353515625 ;
                           IMAD.MOV.U32 R6, RZ, RZ, 0x437c0000 ;
                           FFMA.SAT R3, -R4, R3, 0.5 ;
                           FFMA.RM R3, R3, R6, 12582913 ;
                           FADD R5, R3.reuse, -12583039 ;
                           SHF.L.U32 R3, R3, 0x17, RZ ;
                           FFMA R5, -R4, 1.4426950216293334961, -R5 ;
                           FFMA R5, -R4, 1.925963033500011079e-08, R5 ;
                           MUFU.EX2 R4, R5 ;
                           FFMA R4, R3, R4, 1 ;
                           IADD3 R3, R4, 0x1800000, RZ ;
                           LOP3.LUT R3, R3, 0x7f800000, RZ, 0xc0, !PT ;
                           ISETP.GT.U32.AND P3, PT, R3, 0x1ffffff, PT ;
                       @P3 BRA  ;
                           MOV R20, 0x5820 ;
                           CALL.REL.NOINC  ;
                           BRA  ;
:
                           MUFU.RCP R3, R4 ;
                           FFMA R5, R4, R3, -1 ;
                           FADD.FTZ R6, -R5, -RZ ;
                           FFMA R4, R3, R6, R3 ;
                           BRA  ;
:
                           MOV R3, 0x3bbb989d ;
                           IMAD.MOV.U32 R6, RZ, RZ, 0x437c0000 ;
                           FFMA.SAT R3, R4, R3, 0.5 ;
                           FFMA.RM R3, R3, R6, 12582913 ;
                           FADD R5, R3.reuse, -12583039 ;
                           SHF.L.U32 R3, R3, 0x17, RZ ;
                           FFMA R5, R4, 1.4426950216293334961, -R5 ;
                           FFMA R5, R4, 1.925963033500011079e-08, R5 ;
                           MUFU.EX2 R4, R5 ;
                           FMUL R3, R3, R4 ;
                           FADD R6, R3, 1 ;
                           MUFU.RCP R7, R6 ;
                           FCHK P3, R3, R6 ;
                           FFMA R4, -R6, R7, 1 ;
                           FFMA R4, R7, R4, R7 ;
                           FFMA R7, R3, R4, RZ ;
                           FFMA R9, -R6, R7, R3 ;
                           FFMA R4, R4, R9, R7 ;
                      @!P3 BRA  ;
                           MOV R4, R3 ;
                           MOV R5, R6 ;
                           MOV R18, 0x59f0 ;
                           CALL.REL.NOINC  ;
                           IMAD.MOV.U32 R4, RZ, RZ, R21 ;
:
                           ULDC UR6, c[0x0][0x2b0] ;
                           FADD R14, R4, UR6 ;
:
                           S2R R16, SR_TID.X ;
                           LDC R19, c[0x0][0x29c] ;
                           ISETP.NE.AND P4, PT, R8, RZ, PT ;
                           BSSY B0,  ;
                           CS2R R4, SRZ ;
                           SEL R3, RZ, 0x20, !P4 ;
                           SEL R6, RZ, 0x1, !P4 ;
                           LDC R7, c[0x0][RZ] ;
                           IADD3 R8, -R3, R16, RZ ;
                           IADD3 R9, -R3, R7, RZ ;
                           ISETP.GE.AND P3, PT, R8, R19, PT ;
                           LEA.HI R7, R7, -R6.reuse, RZ, 0x1b ;
                           P2R R10, PR, RZ, 0x8 ;
                           LEA.HI R6, R16, -R6, RZ, 0x1b ;
                       @P3 BRA  ;
                           I2F.U32.RP R15, R9 ;
                           IMAD.MOV R17, RZ, RZ, -R9 ;
                           LOP3.LUT R16, RZ, R16, RZ, 0x33, !PT ;
                           BSSY B1,  ;
                           ISETP.NE.U32.AND P5, PT, R9, RZ, PT ;
                           IADD3 R16, R16, R19, R3 ;
                           MUFU.RCP R15, R15 ;
                           IADD3 R4, R15, 0xffffffe, RZ ;
                           F2I.FTZ.U32.TRUNC.NTZ R5, R4 ;
                           HFMA2.MMA R4, -RZ, RZ, 0, 0 ;
                           IMAD R17, R17, R5, RZ ;
                           IMAD.HI.U32 R5, R5, R17, R4 ;
                           IMAD.HI.U32 R5, R5, R16, RZ ;
                           IADD3 R15, -R5, RZ, RZ ;
                           IMAD R16, R9, R15, R16 ;
                           ISETP.GE.U32.AND P3, PT, R16, R9, PT ;
                       @P3 IADD3 R16, -R9, R16, RZ ;
                       @P3 VIADD R5, R5, 0x1 ;
                           ISETP.GE.U32.AND P4, PT, R16, R9, PT ;
                           MOV R16, R8 ;
                       @P4 IADD3 R5, R5, 0x1, RZ ;
                      @!P5 LOP3.LUT R5, RZ, R9, RZ, 0x33, !PT ;
                           IADD3 R4, R5.reuse, 0x1, RZ ;
                           ISETP.GE.U32.AND P3, PT, R5, 0x3, PT ;
                           LOP3.LUT P4, R15, R4, 0x3, RZ, 0xc0, !PT ;
                           CS2R R4, SRZ ;
                      @!P4 BRA  ;
                           S2UR UR12, SR_CgaCtaId ;
                           UMOV UR6, 0x400 ;
                           IMAD R5, R19.reuse, 0x3, RZ ;
                           UIADD3 UR6, UR6, 0x1e0, URZ ;
                           SHF.R.S32.HI R4, RZ, 0x1f, R8 ;
                           IMAD.SHL.U32 R17, R19, 0x2, RZ ;
                           IADD3 R31, P4, R8, R5, RZ ;
                           LEA.HI.X.SX32 R16, R5, R4, 0x1, P4 ;
                           IADD3 R25, P4, R8, R17, RZ ;
                           ULEA UR6, UR12, UR6, 0x18 ;
                           LEA R30, P5, R31.reuse, UR6, 0x2 ;
                           MOV R18, UR6 ;
                           LEA.HI.X R31, R31, RZ, R16, 0x2, P5 ;
                           LEA.HI.X.SX32 R16, R17, R4, 0x1, P4 ;
                           IADD3 R28, P5, R8, R19, RZ ;
                           LEA R29, P4, R25, UR6, 0x2 ;
                           LEA.HI.X.SX32 R5, R19, R4, 0x1, P5 ;
                           LEA.HI.X R25, R25, RZ, R16, 0x2, P4 ;
                           LEA R27, P4, R28.reuse, UR6, 0x2 ;
                           MOV R19, RZ ;
                           LEA.HI.X R28, R28, RZ, R5, 0x2, P4 ;
                           CS2R R4, SRZ ;
                           MOV R16, R8 ;
                           IMAD.WIDE R18, R8, 0x4, R18 ;
:
                           IMAD.MOV.U32 R32, RZ, RZ, R18 ;
                       @P0 LDS R22, [R27] ;
                           MOV R23, R28 ;
                           VIADD R15, R15, 0xffffffff ;
                           LDS R20, [R32] ;
                           IMAD.IADD R16, R9, 0x1, R16 ;
                           ISETP.NE.AND P4, PT, R15, RZ, PT ;
                       @P1 LDS R24, [R29] ;
                           IMAD.WIDE R18, R9, 0x4, R18 ;
                       @P2 LDS R26, [R30] ;
                           FMUL R17, R20, R11 ;
                       @P0 FFMA R17, R22, R12, R17 ;
                           MOV R22, R27 ;
                       @P1 FFMA R17, R24, R13, R17 ;
                           MOV R24, R29 ;
                           IMAD.WIDE R22, R9, 0x4, R22 ;
                       @P2 FFMA R17, R26, R14, R17 ;
                           IMAD.MOV.U32 R28, RZ, RZ, R23 ;
                           MOV R27, R22 ;
                           F2F.F64.F32 R20, R17 ;
                           STS [R32], R17 ;
                           MOV R22, R30 ;
                           IMAD.WIDE R24, R9.reuse, 0x4, R24 ;
                           MOV R23, R31 ;
                           MOV R29, R24 ;
                           IMAD.WIDE R22, R9, 0x4, R22 ;
                           MOV R31, R23 ;
                           DFMA R4, R20, R20, R4 ;
                           MOV R30, R22 ;
                       @P4 BRA  ;
:
                           BSYNC B1 ;
:
                      @!P3 BRA  ;
                           S2R R20, SR_CgaCtaId ;
                           LDC R18, c[0x0][0x29c] ;
                           MOV R15, 0x400 ;
                           IADD3 R19, R15, 0x1e0, RZ ;
                           SHF.L.U32 R15, R18.reuse, 0x1, RZ ;
                           IMAD R17, R18.reuse, 0x3, RZ ;
                           SHF.L.U32 R18, R18, 0x2, RZ ;
                           LEA R19, R20, R19, 0x18 ;
:
                           IMAD R30, R16, 0x4, R19 ;
                           SHF.L.U32 R28, R9.reuse, 0x2, RZ ;
                           ULDC UR6, c[0x0][0x29c] ;
                           IADD3 R16, R9, R16, R9.reuse ;
                       @P0 IMAD.IADD R22, R30, 0x1, R18 ;
                           LDS R20, [R30] ;
                       @P1 LEA R21, R15, R30.reuse, 0x2 ;
                           IMAD R32, R9, 0x4, R30 ;
                       @P2 LEA R23, R17, R30, 0x2 ;
                       @P0 LDS R22, [R22] ;
                           IADD3 R16, R9, R16, R9 ;
                       @P0 IADD3 R29, R32, R18, RZ ;
                       @P1 LDS R24, [R21] ;
                           ISETP.GE.AND P3, PT, R16, UR6, PT ;
                       @P2 LDS R26, [R23] ;
                       @P2 LEA R21, R17, R32, 0x2 ;
                           FMUL R25, R20, R11 ;
                       @P0 FFMA R25, R22, R12, R25 ;
                       @P1 FFMA R25, R24, R13, R25 ;
                       @P1 IMAD R24, R15, 0x4, R32 ;
                       @P2 FFMA R25, R26, R14, R25 ;
                           STS [R30], R25 ;
                           LDS R20, [R32] ;
                       @P0 LDS R22, [R29] ;
                           IADD3 R30, R32, R28, RZ ;
                       @P1 LDS R24, [R24] ;
                       @P1 LEA R23, R15, R30, 0x2 ;
                       @P2 LDS R26, [R21] ;
                           IADD3 R34, R30, R28, RZ ;
                       @P2 LEA R28, R17.reuse, R34, 0x2 ;
                       @P2 LEA R21, R17, R30, 0x2 ;
                           FMUL R27, R20, R11 ;
                       @P0 FFMA R27, R22, R12, R27 ;
                       @P0 IMAD.IADD R22, R30, 0x1, R18 ;
                       @P1 FFMA R27, R24, R13, R27 ;
                       @P2 FFMA R27, R26, R14, R27 ;
                           STS [R32], R27 ;
                           LDS R20, [R30] ;
                       @P0 LDS R22, [R22] ;
                       @P1 LDS R24, [R23] ;
                       @P2 LDS R26, [R21] ;
                           FMUL R29, R20, R11 ;
                           F2F.F64.F32 R20, R25 ;
                       @P0 FFMA R29, R22, R12, R29 ;
                       @P1 FFMA R29, R24, R13, R29 ;
                       @P0 IMAD.IADD R24, R34, 0x1, R18 ;
                       @P2 FFMA R29, R26, R14, R29 ;
                       @P1 LEA R26, R15, R34, 0x2 ;
                           STS [R30], R29 ;
                           DFMA R20, R20, R20, R4 ;
                           F2F.F64.F32 R4, R29 ;
                           LDS R22, [R34] ;
                       @P0 LDS R24, [R24] ;
                       @P1 LDS R26, [R26] ;
                       @P2 LDS R28, [R28] ;
                           FMUL R31, R22, R11 ;
                           F2F.F64.F32 R22, R27 ;
                       @P0 FFMA R31, R24, R12, R31 ;
                       @P1 FFMA R31, R26, R13, R31 ;
                       @P2 FFMA R31, R28, R14, R31 ;
                           STS [R34], R31 ;
                           DFMA R22, R22, R22, R20 ;
                           F2F.F64.F32 R20, R31 ;
                           DFMA R4, R4, R4, R22 ;
                           DFMA R4, R20, R20, R4 ;
                      @!P3 BRA  ;
:
                           BSYNC B0 ;
:
                           UMOV UR6, 0xffffffff ;
                           BRA.DIV UR6,  ;
:
                           SHFL.BFLY PT, R13, R5, 0x10, 0x1f ;
:
                           SHFL.BFLY PT, R12, R4, 0x10, 0x1f ;
                           DADD R12, R12, R4 ;
:
                           SHFL.BFLY PT, R15, R13, 0x8, 0x1f ;
:
                           SHFL.BFLY PT, R14, R12, 0x8, 0x1f ;
                           IMAD.MOV.U32 R5, RZ, RZ, R15 ;
                           MOV R4, R14 ;
                           DADD R14, R12, R4 ;
:
                           SHFL.BFLY PT, R17, R15, 0x4, 0x1f ;
:
                           SHFL.BFLY PT, R16, R14, 0x4, 0x1f ;
                           MOV R5, R17 ;
                           MOV R4, R16 ;
                           DADD R16, R14, R4 ;
:
                           SHFL.BFLY PT, R5, R17, 0x2, 0x1f ;
:
                           SHFL.BFLY PT, R4, R16, 0x2, 0x1f ;
                           DADD R4, R16, R4 ;
:
                           SHFL.BFLY PT, R13, R5, 0x1, 0x1f ;
:
                           SHFL.BFLY PT, R12, R4, 0x1, 0x1f ;
:
                           ISETP.NE.AND P1, PT, R2, RZ, PT ;
                           DADD R12, R4, R12 ;
                           LOP3.LUT P2, RZ, R6, 0x1f, R0, 0xf8, !PT ;
                           ISETP.NE.U32.AND P0, PT, RZ, UR4, PT ;
                           ISETP.NE.AND.EX P2, PT, RZ, UR5, !P2, P0 ;
                      @!P1 S2R R14, SR_CgaCtaId ;
                      @!P1 MOV R11, 0x400 ;
                      @!P1 IADD3 R11, R11, 0x8, RZ ;
                      @!P1 LEA R11, R14, R11, 0x18 ;
                      @!P1 IMAD R11, R6, 0x8, R11 ;
                      @!P1 STS.64 [R11], R12 ;
                       @P2 CS2R R4, SR_GLOBALTIMERLO ;
                           MOV R12, UR4 ;
                           MOV R13, UR5 ;
                           WARPSYNC.ALL ;
                           SHF.L.U32 R0, R7, 0x5, RZ ;
                       @P2 STG.E.64 desc[UR8][R12.64+0x10], R4 ;
                           BAR.SYNC.DEFER_BLOCKING 0x1, R0 ;
                       @P2 CS2R R20, SR_GLOBALTIMERLO ;
                           ISETP.GE.AND P0, PT, R2, R7, PT ;
                      @!P0 S2R R5, SR_CgaCtaId ;
                      @!P0 MOV R0, 0x400 ;
                      @!P0 VIADD R0, R0, 0x8 ;
                      @!P0 LEA R11, R5, R0, 0x18 ;
                           CS2R R4, SRZ ;
                      @!P0 LEA R0, R2, R11, 0x3 ;
                           LDC R11, c[0x0][0x29c] ;
                      @!P0 LDS.64 R4, [R0] ;
                           VIADD R0, R11, 0xffffffff ;
                           LOP3.LUT P0, RZ, R0, R11, RZ, 0xc0, !PT ;
:
                           SHFL.BFLY PT, R13, R5, 0x10, 0x1f ;
:
                           SHFL.BFLY PT, R12, R4, 0x10, 0x1f ;
                           DADD R12, R12, R4 ;
:
                           SHFL.BFLY PT, R15, R13, 0x8, 0x1f ;
:
                           SHFL.BFLY PT, R14, R12, 0x8, 0x1f ;
                           DADD R14, R12, R14 ;
                           MOV R12, UR4 ;
                           MOV R13, UR5 ;
:
                           SHFL.BFLY PT, R17, R15, 0x4, 0x1f ;
:
                           SHFL.BFLY PT, R16, R14, 0x4, 0x1f ;
                       @P2 STG.E.64 desc[UR8][R12.64+0x18], R20 ;
                           DADD R16, R14, R16 ;
:
                           SHFL.BFLY PT, R19, R17, 0x2, 0x1f ;
:
                           SHFL.BFLY PT, R18, R16, 0x2, 0x1f ;
                           DADD R18, R16, R18 ;
:
                           SHFL.BFLY PT, R5, R19, 0x1, 0x1f ;
:
                           SHFL.BFLY PT, R4, R18, 0x1, 0x1f ;
                           DADD R22, R18, R4 ;
                      @!P0 BRA  ;
                           I2F.F64 R12, R11 ;
                           MOV R4, 0x1 ;
                           BSSY B0,  ;
                           FSETP.GEU.AND P3, PT, |R23|, 6.5827683646048100446e-37, PT ;
                           MUFU.RCP64H R5, R13 ;
                           DFMA R14, -R12, R4, 1 ;
                           DFMA R14, R14, R14, R14 ;
                           DFMA R14, R4, R14, R4 ;
                           DFMA R4, -R12, R14, 1 ;
                           DFMA R4, R14, R4, R14 ;
                           DMUL R14, R22, R4 ;
                           DFMA R16, -R12, R14, R22 ;
                           DFMA R4, R4, R16, R14 ;
                           FFMA R0, RZ, R13, R5 ;
                           FSETP.GT.AND P0, PT, |R0|, 1.469367938527859385e-39, PT ;
                       @P0 BRA P3,  ;
                           MOV R20, R12 ;
                           MOV R21, R13 ;
                           MOV R34, 0x6a80 ;
                           CALL.REL.NOINC  ;
                           IMAD.MOV.U32 R4, RZ, RZ, R38 ;
                           MOV R5, R39 ;
:
                           BSYNC B0 ;
:
                           BRA  ;
:
                           FLO.U32 R0, R11 ;
                           MOV R4, RZ ;
                           IADD3 R0, -R0, 0x3ff, RZ ;
                           SHF.L.U32 R5, R0, 0x14, RZ ;
                           DMUL R4, R22, R4 ;
:
                           F2F.F32.F64 R4, R4 ;
                           ULDC UR6, c[0x0][0x2ac] ;
                           BSSY B0,  ;
                           FADD R11, R4, UR6 ;
                           VIADD R0, R11, 0xf3000000 ;
                           MUFU.RSQ R12, R11 ;
                           ISETP.GT.U32.AND P0, PT, R0, 0x727fffff, PT ;
                      @!P0 BRA  ;
                           MOV R4, R11 ;
                           MOV R24, 0x6bc0 ;
                           CALL.REL.NOINC  ;
                           MOV R4, R20 ;
                           BRA  ;
:
                           FMUL.FTZ R4, R11, R12 ;
                           FMUL.FTZ R0, R12, 0.5 ;
                           FFMA R5, -R4, R4, R11 ;
                           FFMA R4, R5, R0, R4 ;
:
                           BSYNC B0 ;
:
                           IADD3 R0, R4, 0x1800000, RZ ;
                           BSSY B1,  ;
                           LOP3.LUT R0, R0, 0x7f800000, RZ, 0xc0, !PT ;
                           ISETP.GT.U32.AND P0, PT, R0, 0x1ffffff, PT ;
                       @P0 BRA  ;
                           MOV R20, 0x6ca0 ;
                           CALL.REL.NOINC  ;
                           IMAD.MOV.U32 R11, RZ, RZ, R4 ;
                           BRA  ;
:
                           MUFU.RCP R11, R4 ;
                           FFMA R0, R11, R4, -1 ;
                           FADD.FTZ R0, -R0, -RZ ;
                           FFMA R11, R11, R0, R11 ;
:
                           BSYNC B1 ;
:
                           ULDC.64 UR12, c[0x0][0x280] ;
                           ISETP.NE.U32.AND P0, PT, RZ, UR12, PT ;
                           ISETP.NE.AND.EX P0, PT, RZ, UR13, PT, P0 ;
                      @!P0 BRA  ;
                           ULDC UR6, c[0x0][0x29c] ;
                           ULDC.64 UR12, c[0x0][0x278] ;
                           USHF.R.S32.HI UR6, URZ, 0x5, UR6 ;
                           BSSY B2,  ;
                           ULDC.64 UR18, c[0x0][0x280] ;
                           ULDC.64 UR16, c[0x0][0x288] ;
                           ISETP.GE.AND P0, PT, R6, UR6, PT ;
                       @P0 BRA  ;
                           S2R R8, SR_CTAID.Y ;
                           MOV R0, 0x400 ;
                           MOV R12, UR7 ;
                           S2R R3, SR_CgaCtaId ;
                           IADD3 R0, R0, 0x1e0, RZ ;
                           SHF.L.U32 R12, R12, 0x2, RZ ;
                           IMAD.WIDE R8, R8, UR6, RZ ;
                           LEA R10, R3, R0, 0x18 ;
:
                           IMAD.IADD R13, R7, 0x1, R6 ;
                           LEA R3, R6, R2, 0x5 ;
                           UMOV UR14, 0xffffffff ;
                           ISETP.GE.AND P0, PT, R13, UR6, PT ;
                           LEA R17, R3, R10, 0x2 ;
                           SEL R13, R13, 0xffffffff, !P0 ;
                           IADD3 R22, R17, R12, RZ ;
                           LDS R0, [R17] ;
                           ISETP.GE.AND P0, PT, R13, RZ, PT ;
                           IADD3 R15, P3, R3, UR10, RZ ;
                           LDS R19, [R22] ;
                           SEL R5, R6, R13, !P0 ;
                           LEA.HI.X.SX32 R14, R3, UR11, 0x1, P3 ;
                           LEA R5, R5, R2, 0x5 ;
                           LEA R4, P3, R15, UR12, 0x2 ;
                           SHF.R.S32.HI R18, RZ, 0x1f, R5 ;
                           IMAD R21, R5.reuse, 0x4, R10 ;
                       @P0 IADD3 R20, P4, R5, UR10, RZ ;
                           LEA.HI.X R5, R15, UR13, R14, 0x2, P3 ;
                           IADD3 R23, R21, R12, RZ ;
                           LDS R16, [R21] ;
                       @P0 IADD3.X R3, R18, UR11, RZ, P4, !PT ;
                       @P0 LEA R18, P4, R20, UR12, 0x2 ;
                           LDS R23, [R23] ;
                           FMUL R0, R0, R11 ;
                           FMUL R17, R0, R19 ;
                       @P0 LEA.HI.X R19, R20, UR13, R3, 0x2, P4 ;
                           STG.E desc[UR8][R4.64], R17 ;
                           FMUL R16, R16, R11 ;
                           FMUL R16, R16, R23 ;
                           FADD R23, |R17|, -RZ ;
                       @P0 STG.E desc[UR8][R18.64], R16 ;
                           BRA.DIV UR14,  ;
:
                           SHFL.BFLY PT, R0, R23, 0x10, 0x1f ;
                           FADD R23, |R16|, -RZ ;
:
                           SHFL.BFLY PT, R3, R23, 0x10, 0x1f ;
                           FMNMX R0, |R17|, R0, !PT ;
:
                           SHFL.BFLY PT, R5, R0, 0x8, 0x1f ;
                           FMNMX R3, |R16|, R3, !PT ;
:
                           SHFL.BFLY PT, R4, R3, 0x8, 0x1f ;
                           FMNMX R5, R0, R5, !PT ;
:
                           SHFL.BFLY PT, R18, R5, 0x4, 0x1f ;
                           FMNMX R4, R3, R4, !PT ;
:
                           SHFL.BFLY PT, R19, R4, 0x4, 0x1f ;
                           FMNMX R18, R5, R18, !PT ;
:
                           SHFL.BFLY PT, R25, R18, 0x2, 0x1f ;
                           FMNMX R19, R4, R19, !PT ;
:
                           SHFL.BFLY PT, R26, R19, 0x2, 0x1f ;
                           FMNMX R25, R18, R25, !PT ;
:
                           SHFL.BFLY PT, R0, R25, 0x1, 0x1f ;
                           FMNMX R26, R19, R26, !PT ;
:
                           SHFL.BFLY PT, R24, R26, 0x1, 0x1f ;
                           FMNMX R3, R25, R0, !PT ;
:
                           FSETP.GT.AND P3, PT, R3, RZ, PT ;
                           BSSY B3,  ;
                           HFMA2.MMA R19, -RZ, RZ, 0, 0 ;
                           FMNMX R0, R26, R24, !PT ;
                           IMAD.MOV.U32 R20, RZ, RZ, RZ ;
                      @!P3 BRA  ;
                           MUFU.RCP R4, R3 ;
                           UMOV UR14, 0x42fe0000 ;
                           BSSY B4,  ;
                           MOV R20, UR14 ;
                           FCHK P3, R20, R3 ;
                           FFMA R5, -R3, R4, 1 ;
                           FFMA R4, R4, R5, R4 ;
                           FFMA R5, R4, 127, RZ ;
                           FFMA R18, -R3, R5, 127 ;
                           FFMA R4, R4, R18, R5 ;
                      @!P3 BRA  ;
                           MOV R4, 0x42fe0000 ;
                           MOV R5, R3 ;
                           MOV R18, 0x72f0 ;
                           CALL.REL.NOINC  ;
                           IMAD.MOV.U32 R4, RZ, RZ, R21 ;
:
                           BSYNC B4 ;
:
                           FMUL R4, R17, R4 ;
                           F2I.NTZ R20, R4 ;
:
                           BSYNC B3 ;
:
                           FSETP.GT.AND P3, PT, R0, RZ, PT ;
                           BSSY B3,  ;
                      @!P3 BRA  ;
                           MUFU.RCP R5, R0 ;
                           UMOV UR14, 0x42fe0000 ;
                           BSSY B4,  ;
                           MOV R17, UR14 ;
                           FCHK P3, R17, R0 ;
                           FFMA R4, -R0, R5, 1 ;
                           FFMA R4, R5, R4, R5 ;
                           FFMA R5, R4, 127, RZ ;
                           FFMA R18, -R0, R5, 127 ;
                           FFMA R5, R4, R18, R5 ;
                      @!P3 BRA  ;
                           HFMA2.MMA R4, -RZ, RZ, 3.49609375, 0 ;
                           MOV R5, R0 ;
                           MOV R18, 0x7460 ;
                           CALL.REL.NOINC  ;
                           IMAD.MOV.U32 R5, RZ, RZ, R21 ;
:
                           BSYNC B4 ;
:
                           FMUL R5, R16, R5 ;
                           F2I.NTZ R19, R5 ;
:
                           BSYNC B3 ;
:
                           UMOV UR14, 0xffffffff ;
                           VIMNMX R20, R20, 0x7f, PT ;
                           VIMNMX R16, R19, 0x7f, PT ;
                           VIMNMX R19, R20, -0x7f, !PT ;
                           VIMNMX R16, R16, -0x7f, !PT ;
                           BRA.DIV UR14,  ;
:
                           SHFL.BFLY PT, R4, R19, 0x10, 0x1f ;
:
                           SHFL.BFLY PT, R5, R16, 0x10, 0x1f ;
                           IADD3 R4, R19, R4, RZ ;
                           IADD3 R5, R16, R5, RZ ;
:
                           SHFL.BFLY PT, R17, R4, 0x8, 0x1f ;
:
                           SHFL.BFLY PT, R18, R5, 0x8, 0x1f ;
                           IADD3 R17, R4, R17, RZ ;
                           IMAD.IADD R18, R5, 0x1, R18 ;
:
                           SHFL.BFLY PT, R26, R17, 0x4, 0x1f ;
:
                           SHFL.BFLY PT, R25, R18, 0x4, 0x1f ;
                           IADD3 R26, R17, R26, RZ ;
                           IADD3 R25, R18, R25, RZ ;
:
                           SHFL.BFLY PT, R27, R26, 0x2, 0x1f ;
:
                           SHFL.BFLY PT, R28, R25, 0x2, 0x1f ;
                           IADD3 R27, R26, R27, RZ ;
                           IMAD.IADD R28, R25, 0x1, R28 ;
:
                           SHFL.BFLY PT, R4, R27, 0x1, 0x1f ;
:
                           SHFL.BFLY PT, R24, R28, 0x1, 0x1f ;
                           IADD3 R29, R27, R4, RZ ;
:
                           IADD3 R4, P3, R15, UR18, RZ ;
                           BSSY B3,  ;
                           IADD3 R17, R28, R24, RZ ;
                           IADD3.X R5, R14, UR19, RZ, P3, !PT ;
                           STG.E.U8 desc[UR8][R4.64], R19 ;
                       @P1 BRA  ;
                           HFMA2.MMA R4, -RZ, RZ, 3.49609375, 0 ;
                           IMAD.MOV.U32 R5, RZ, RZ, 0x3c010204 ;
                           FCHK P3, R3, 127 ;
                           IADD3 R15, P4, R8, R6, RZ ;
                           BSSY B4,  ;
                           I2FP.F32.S32 R19, R29 ;
                           LEA.HI.X.SX32 R20, R6, R9, 0x1, P4 ;
                           LEA R14, P4, R15, UR16, 0x3 ;
                           FFMA R4, -R4, R5, 1 ;
                           LEA.HI.X R15, R15, UR17, R20, 0x3, P4 ;
                           FFMA R4, R4, R5, 0.0078740157186985015869 ;
                           FFMA R5, R3, R4, RZ ;
                           FFMA R18, R5, -127, R3 ;
                           FFMA R18, R4, R18, R5 ;
                      @!P3 BRA  ;
                           MOV R4, R3 ;
                           MOV R5, 0x42fe0000 ;
                           MOV R18, 0x77d0 ;
                           CALL.REL.NOINC  ;
                           MOV R18, R21 ;
:
                           BSYNC B4 ;
:
                           FMUL R19, R19, R18 ;
                           STG.E.64 desc[UR8][R14.64], R18 ;
:
                           BSYNC B3 ;
:
                           BSSY B3,  ;
                      @!P0 BRA  ;
                           IMAD R3, R13, 0x20, R2 ;
                           MOV R4, UR18 ;
                           MOV R14, UR19 ;
                           IADD3 R4, P0, P3, R4, UR10, R3.reuse ;
                           SHF.R.S32.HI R3, RZ, 0x1f, R3 ;
                           IADD3.X R5, R14, UR11, R3, P0, P3 ;
                           STG.E.U8 desc[UR8][R4.64], R16 ;
                       @P1 BRA  ;
                           HFMA2.MMA R3, -RZ, RZ, 1.0009765625, 3.07559967041015625e-05 ;
                           IMAD.MOV.U32 R4, RZ, RZ, 0x42fe0000 ;
                           FCHK P0, R0, 127 ;
                           IADD3 R5, P3, R8, R13, RZ ;
                           BSSY B4,  ;
                           I2FP.F32.S32 R17, R17 ;
                           LEA.HI.X.SX32 R16, R13, R9, 0x1, P3 ;
                           LEA R14, P3, R5, UR16, 0x3 ;
                           FFMA R4, -R4, R3, 1 ;
                           LEA.HI.X R15, R5, UR17, R16, 0x3, P3 ;
                           FFMA R18, R4, R3, 0.0078740157186985015869 ;
                           FFMA R3, R0, R18, RZ ;
                           FFMA R4, R3, -127, R0 ;
                           FFMA R16, R18, R4, R3 ;
                      @!P0 BRA  ;
                           MOV R4, R0 ;
                           MOV R5, 0x42fe0000 ;
                           MOV R18, 0x79f0 ;
                           CALL.REL.NOINC  ;
                           MOV R16, R21 ;
:
                           BSYNC B4 ;
:
                           FMUL R17, R17, R16 ;
                           STG.E.64 desc[UR8][R14.64], R16 ;
:
                           BSYNC B3 ;
:
                           IMAD R6, R7, 0x2, R6 ;
                           ISETP.GE.AND P0, PT, R6, UR6, PT ;
                      @!P0 BRA  ;
:
                           BSYNC B2 ;
:
                      @!P2 EXIT ;
                           CS2R R2, SR_GLOBALTIMERLO ;
                           MOV R4, UR4 ;
                           MOV R5, UR5 ;
                           STG.E.64 desc[UR8][R4.64+0x20], R2 ;
:
                           EXIT ;
:
                           ISETP.NE.AND P0, PT, R10, RZ, PT ;
:
                       @P0 EXIT ;
                           I2F.U32.RP R2, R9 ;
                           S2R R0, SR_TID.X ;
                           IMAD.MOV R7, RZ, RZ, -R9 ;
                           ULDC UR6, c[0x0][0x29c] ;
                           ISETP.NE.U32.AND P2, PT, R9, RZ, PT ;
                           BSSY B0,  ;
                           MUFU.RCP R2, R2 ;
                           IADD3 R4, R2, 0xffffffe, RZ ;
                           LOP3.LUT R0, RZ, R0, RZ, 0x33, !PT ;
                           F2I.FTZ.U32.TRUNC.NTZ R5, R4 ;
                           IADD3 R0, R0, UR6, R3 ;
                           HFMA2.MMA R4, -RZ, RZ, 0, 0 ;
                           IMAD R7, R7, R5, RZ ;
                           IMAD.HI.U32 R7, R5, R7, R4 ;
                           IMAD.HI.U32 R7, R7, R0, RZ ;
                           IADD3 R2, -R7, RZ, RZ ;
                           IMAD R0, R9, R2, R0 ;
                           ISETP.GE.U32.AND P0, PT, R0, R9, PT ;
                       @P0 IADD3 R0, -R9, R0, RZ ;
                       @P0 VIADD R7, R7, 0x1 ;
                           ISETP.GE.U32.AND P1, PT, R0, R9, PT ;
                       @P1 IADD3 R7, R7, 0x1, RZ ;
                      @!P2 LOP3.LUT R7, RZ, R9, RZ, 0x33, !PT ;
                           IADD3 R0, R7.reuse, 0x1, RZ ;
                           ISETP.GE.U32.AND P2, PT, R7, 0x3, PT ;
                           LOP3.LUT P0, R3, R0, 0x3, RZ, 0xc0, !PT ;
                      @!P0 BRA  ;
                           S2UR UR5, SR_CgaCtaId ;
                           UMOV UR4, 0x400 ;
                           SHF.R.S32.HI R0, RZ, 0x1f, R8 ;
                           UIADD3 UR4, UR4, 0x1e0, URZ ;
                           IADD3 R17, P0, R8.reuse, UR10, RZ ;
                           ULDC.64 UR12, c[0x0][0x278] ;
                           IADD3 R7, P1, R8, UR7, RZ ;
                           IADD3.X R4, R0.reuse, UR11, RZ, P0, !PT ;
                           IADD3.X R0, R0, UR15, RZ, P1, !PT ;
                           LEA R14, P0, R17, UR12, 0x2 ;
                           LEA.HI.X R17, R17, UR13, R4, 0x2, P0 ;
                           ULEA UR4, UR5, UR4, 0x18 ;
                           LEA R6, P1, R7.reuse, UR4, 0x2 ;
                           MOV R2, UR4 ;
                           LEA.HI.X R7, R7, RZ, R0, 0x2, P1 ;
                           IMAD.MOV.U32 R0, RZ, RZ, R3 ;
                           MOV R3, RZ ;
                           IMAD.WIDE R2, R8, 0x4, R2 ;
:
                           MOV R10, R2 ;
                           LDS R5, [R6] ;
                           MOV R12, R14 ;
                           IMAD.MOV.U32 R13, RZ, RZ, R17 ;
                           IADD3 R0, R0, -0x1, RZ ;
                           LDS R4, [R10] ;
                           IMAD.IADD R8, R9.reuse, 0x1, R8 ;
                           ISETP.NE.AND P0, PT, R0, RZ, PT ;
                           IMAD.WIDE R6, R9, 0x4, R6 ;
                           IMAD.WIDE R2, R9, 0x4, R2 ;
                           FMUL R4, R4, R11 ;
                           FMUL R15, R4, R5 ;
                           IMAD.WIDE R4, R9, 0x4, R12 ;
                           STG.E desc[UR8][R12.64], R15 ;
                           MOV R14, R4 ;
                           MOV R17, R5 ;
                       @P0 BRA  ;
:
                           BSYNC B0 ;
:
                      @!P2 EXIT ;
                           S2R R3, SR_CgaCtaId ;
                           MOV R0, 0x400 ;
                           ULDC.64 UR4, c[0x0][0x278] ;
                           IADD3 R0, R0, 0x1e0, RZ ;
                           LEA R23, R3, R0, 0x18 ;
:
                           IMAD R0, R8, 0x4, R23 ;
                           MOV R3, UR7 ;
                           IMAD R4, R9, 0x4, R0 ;
                           LEA R22, R3, R0, 0x2 ;
                           LDS R0, [R0] ;
                           IMAD R10, R9.reuse, 0x4, R4 ;
                           IADD3 R3, P0, R8.reuse, UR10, RZ ;
                           IMAD R12, R9.reuse, 0x4, R22 ;
                           LDS R6, [R4] ;
                           IMAD R7, R9.reuse, 0x4, R10 ;
                           LEA.HI.X.SX32 R20, R8, UR11, 0x1, P0 ;
                           IMAD R16, R9, 0x4, R12 ;
                           LDS R14, [R10] ;
                           LEA R2, P0, R3, UR4, 0x2 ;
                           IADD3 R8, R9.reuse, R8, R9.reuse ;
                           LDS R18, [R7] ;
                           LEA R15, R9, R16, 0x2 ;
                           LEA.HI.X R3, R3, UR5, R20, 0x2, P0 ;
                           LDS R13, [R22] ;
                           IADD3 R8, R9, R8, R9 ;
                           LDS R17, [R12] ;
                           IMAD.WIDE R4, R9.reuse, 0x4, R2 ;
                           ISETP.GE.AND P0, PT, R8, UR6, PT ;
                           LDS R19, [R16] ;
                           LDS R21, [R15] ;
                           FMUL R0, R0, R11.reuse ;
                           FMUL R10, R6, R11 ;
                           IMAD.WIDE R6, R9, 0x4, R4 ;
                           FMUL R14, R14, R11.reuse ;
                           FMUL R18, R18, R11 ;
                           FMUL R15, R0, R13 ;
                           IMAD.WIDE R12, R9, 0x4, R6 ;
                           FMUL R17, R10, R17 ;
                           STG.E desc[UR8][R2.64], R15 ;
                           FMUL R19, R14, R19 ;
                           STG.E desc[UR8][R4.64], R17 ;
                           FMUL R21, R18, R21 ;
                           STG.E desc[UR8][R6.64], R19 ;
                           STG.E desc[UR8][R12.64], R21 ;
                      @!P0 BRA  ;
:
                           EXIT ;
:
                           S2UR UR12, SR_CgaCtaId ;
                           UMOV UR6, 0x400 ;
                           MOV R0, 0xffffffff ;
                           UIADD3 UR14, UR6, 0x108, URZ ;
                           IMAD R15, R21.reuse, 0x3, RZ ;
                           UIADD3 UR13, UR6, 0x16c, URZ ;
                           VIADDMNMX.U32 R5, R21.reuse, R0, 0x2, PT ;
                           IMAD.SHL.U32 R4, R21.reuse, 0x4, RZ ;
                           ISETP.GE.AND P3, PT, R21.reuse, 0x1, PT ;
                           HFMA2.MMA R14, -RZ, RZ, 0, 0 ;
                           SHF.L.U32 R17, R21, 0x1, RZ ;
                           IMAD.SHL.U32 R10, R5, 0x4, RZ ;
                           IADD3 R3, R15, 0x3, RZ ;
                           IADD3 R0, R17, 0x3, RZ ;
                           IADD3 R7, R4.reuse, 0x3, RZ ;
                           MOV R13, RZ ;
                           ULEA UR14, UR12, UR14, 0x18 ;
                           ULEA UR13, UR12, UR13, 0x18 ;
                           ULEA UR6, UR12, UR6, 0x18 ;
                           LEA R28, R4, UR14, 0x2 ;
                           LDC R4, c[0x2][R10] ;
                           LEA R9, R3, UR13, 0x2 ;
                           LEA R5, R0, UR13, 0x2 ;
                       @P1 LDS R23, [R28+0x8] ;
                           LEA R3, R17, UR14, 0x2 ;
                           LEA R34, R7, UR13, 0x2 ;
                       @P3 LDS R0, [R5] ;
                           LEA R8, R15, UR14, 0x2 ;
                       @P3 LDS R7, [R3] ;
                       @P0 LDS R37, [R3+0x4] ;
                       @P1 LDS R19, [R3+0x8] ;
                       @P2 LDS R33, [R3+0xc] ;
                       @P0 LDS R18, [R5+0x4] ;
                       @P1 LDS R26, [R5+0x8] ;
                       @P2 LDS R32, [R5+0xc] ;
                       @P1 LDS R35, [R8+0x8] ;
                       @P1 LDS R30, [R9+0x8] ;
                       @P2 LDS R31, [R8+0xc] ;
                       @P2 LDS R20, [R9+0xc] ;
                       @P1 LDS R22, [R34+0x8] ;
                       @P2 LDS R25, [R28+0xc] ;
                       @P2 LDS R24, [R34+0xc] ;
                           LDS R29, [UR6+0x174] ;
                      @!P0 BRA  ;
                           LDS R3, [R8] ;
                           LDS R11, [R8+0x4] ;
                           LDS R12, [R9] ;
                           LDS R39, [R9+0x4] ;
                           FMUL R10, R6.reuse, R3 ;
                           FMUL R14, R6, R11 ;
                           FFMA R13, R29.reuse, R10, R12 ;
                           FFMA R14, R29, R14, R39 ;
:
                           MOV R16, RZ ;
                           IMAD.MOV.U32 R12, RZ, RZ, RZ ;
                      @!P1 BRA  ;
                           LDS R3, [R28] ;
                           LDS R11, [R28+0x4] ;
                           LDS R8, [R34] ;
                           LDS R9, [R34+0x4] ;
                           FMUL R12, R6.reuse, R3 ;
                           FMUL R16, R6, R11 ;
                           FFMA R12, R29.reuse, R12, R8 ;
                           FFMA R16, R29, R16, R9 ;
:
                           IMAD R3, R21, 0x5, RZ ;
                           HFMA2.MMA R34, -RZ, RZ, 0, 0 ;
                           CS2R R10, SRZ ;
                           CS2R R8, SRZ ;
                       @P3 FMUL R7, R6, R7 ;
                           IADD3 R28, R3.reuse, 0x3, RZ ;
                           LEA R3, R3, UR14, 0x2 ;
                           LEA R28, R28, UR13, 0x2 ;
                      @!P2 BRA  ;
                           LDS R11, [R3] ;
                           LDS R39, [R3+0x4] ;
                           LDS R36, [R28] ;
                           LDS R41, [R28+0x4] ;
                           FMUL R10, R6.reuse, R11 ;
                           FMUL R38, R6, R39 ;
                           FFMA R10, R29.reuse, R10, R36 ;
                           FFMA R11, R29, R38, R41 ;
:
                      @!P2 BRA  ;
                           LDS R9, [R3+0x8] ;
                           LDS R39, [R3+0xc] ;
                           LDS R36, [R28+0x8] ;
                           LDS R41, [R28+0xc] ;
                           FMUL R8, R6.reuse, R9 ;
                           FMUL R38, R6, R39 ;
                           FFMA R8, R29.reuse, R8, R36 ;
                           FFMA R9, R29, R38, R41 ;
:
                       @P1 FMUL R19, R6.reuse, R19 ;
                           IMAD.MOV.U32 R3, RZ, RZ, RZ ;
                       @P3 FFMA R34, R29.reuse, R7, R0 ;
                       @P0 FMUL R37, R6.reuse, R37 ;
                       @P1 FFMA R3, R29.reuse, R19, R26 ;
                           HFMA2.MMA R0, -RZ, RZ, 0, 0 ;
                           SHF.R.S32.HI R5, RZ, 0x1f, R4 ;
                           HFMA2.MMA R26, -RZ, RZ, 0, 0 ;
                           MOV R7, RZ ;
                       @P2 FMUL R33, R6.reuse, R33 ;
                       @P1 FMUL R35, R6.reuse, R35 ;
                       @P2 FMUL R31, R6.reuse, R31 ;
                       @P1 FMUL R23, R6.reuse, R23 ;
                       @P2 FMUL R25, R6, R25 ;
                       @P0 FFMA R7, R29, R37, R18 ;
                           BSSY B1,  ;
                           CS2R R18, SRZ ;
                           MOV R28, RZ ;
                       @P2 FFMA R0, R29.reuse, R33, R32 ;
                       @P1 FFMA R28, R29.reuse, R35, R30 ;
                       @P2 FFMA R19, R29.reuse, R31, R20 ;
                       @P1 FFMA R18, R29.reuse, R23, R22 ;
                       @P2 FFMA R26, R29, R25, R24 ;
:
                           BRX R4 -0x88f0                                                            (*"BRANCH_TARGETS ,,"*);
:
                           ISETP.NE.AND P0, PT, R21, 0x3, PT ;
                       @P0 BRA  ;
                           FMNMX R4, R34, -INF , !PT ;
                           IMAD.MOV.U32 R21, RZ, RZ, 0x3bbb989d ;
                           MOV R22, 0x437c0000 ;
                           BSSY B3,  ;
                           FMNMX R4, R7, R4, !PT ;
                           FMNMX R4, R3, R4, !PT ;
                           FADD R34, -R4, R34 ;
                           FADD R6, R7, -R4.reuse ;
                           FADD R4, R3, -R4 ;
                           FFMA.SAT R5, R34, R21.reuse, 0.5 ;
                           FFMA.SAT R20, R6, R21.reuse, 0.5 ;
                           FFMA.SAT R21, R4, R21, 0.5 ;
                           FFMA.RM R5, R5, R22.reuse, 12582913 ;
                           FFMA.RM R20, R20, R22.reuse, 12582913 ;
                           FFMA.RM R22, R21, R22, 12582913 ;
                           FADD R7, R5.reuse, -12583039 ;
                           FADD R3, R20, -12583039 ;
                           FADD R23, R22, -12583039 ;
                           SHF.L.U32 R20, R20, 0x17, RZ ;
                           FFMA R7, R34, 1.4426950216293334961, -R7 ;
                           FFMA R3, R6, 1.4426950216293334961, -R3 ;
                           FFMA R23, R4, 1.4426950216293334961, -R23 ;
                           FFMA R7, R34, 1.925963033500011079e-08, R7 ;
                           FFMA R21, R6, 1.925963033500011079e-08, R3 ;
                           FFMA R23, R4, 1.925963033500011079e-08, R23 ;
                           SHF.L.U32 R6, R5, 0x17, RZ ;
                           IMAD.SHL.U32 R3, R22, 0x800000, RZ ;
                           MUFU.EX2 R7, R7 ;
                           MUFU.EX2 R21, R21 ;
                           MUFU.EX2 R24, R23 ;
                           FMUL R6, R6, R7 ;
                           FADD R4, RZ, R6 ;
                           FMUL R7, R20, R21 ;
                           FADD R4, R4, R7 ;
                           FMUL R3, R3, R24 ;
                           FADD R21, R4, R3 ;
                           IADD3 R4, R21, 0x1800000, RZ ;
                           LOP3.LUT R4, R4, 0x7f800000, RZ, 0xc0, !PT ;
                           ISETP.GT.U32.AND P0, PT, R4, 0x1ffffff, PT ;
                       @P0 BRA  ;
                           MOV R4, R21 ;
                           MOV R20, 0x8bc0 ;
                           CALL.REL.NOINC  ;
                           BRA  ;
:
                           MUFU.RCP R4, R21 ;
                           FFMA R5, R21, R4, -1 ;
                           FADD.FTZ R5, -R5, -RZ ;
                           FFMA R4, R4, R5, R4 ;
:
                           BSYNC B3 ;
:
                           FMNMX R5, R13, -INF , !PT ;
                           HFMA2.MMA R24, -RZ, RZ, 0.96630859375, -0.0022525787353515625 ;
                           IMAD.MOV.U32 R23, RZ, RZ, 0x437c0000 ;
                           ULDC UR6, c[0x0][0x2b0] ;
                           FMNMX R5, R14, R5, !PT ;
                           FFMA R6, R6, R4.reuse, UR6 ;
                           FFMA R7, R7, R4.reuse, UR6 ;
                           FFMA R3, R3, R4, UR6 ;
                           FMNMX R5, R28, R5, !PT ;
                           BSSY B3,  ;
                           FADD R13, R13, -R5.reuse ;
                           FADD R21, R14, -R5.reuse ;
                           FADD R28, R28, -R5 ;
                           FFMA.SAT R20, R13, R24.reuse, 0.5 ;
                           FFMA.SAT R22, R21, R24.reuse, 0.5 ;
                           FFMA.SAT R5, R28, R24, 0.5 ;
                           FFMA.RM R20, R20, R23.reuse, 12582913 ;
                           FFMA.RM R22, R22, R23.reuse, 12582913 ;
                           FFMA.RM R23, R5, R23, 12582913 ;
                           FADD R14, R20, -12583039 ;
                           FADD R24, R22.reuse, -12583039 ;
                           FADD R5, R23, -12583039 ;
                           SHF.L.U32 R22, R22, 0x17, RZ ;
                           FFMA R14, R13, 1.4426950216293334961, -R14 ;
                           FFMA R24, R21, 1.4426950216293334961, -R24 ;
                           FFMA R14, R13, 1.925963033500011079e-08, R14 ;
                           FFMA R13, R28, 1.4426950216293334961, -R5 ;
                           FFMA R24, R21, 1.925963033500011079e-08, R24 ;
                           FFMA R21, R28, 1.925963033500011079e-08, R13 ;
                           MUFU.EX2 R14, R14 ;
                           SHF.L.U32 R13, R20, 0x17, RZ ;
                           SHF.L.U32 R28, R23, 0x17, RZ ;
                           MUFU.EX2 R5, R24 ;
                           MUFU.EX2 R21, R21 ;
                           FMUL R13, R13, R14 ;
                           FMUL R14, R22, R5 ;
                           FADD R5, RZ, R13 ;
                           FADD R5, R5, R14 ;
                           FMUL R28, R28, R21 ;
                           FADD R23, R5, R28 ;
                           VIADD R5, R23, 0x1800000 ;
                           LOP3.LUT R5, R5, 0x7f800000, RZ, 0xc0, !PT ;
                           ISETP.GT.U32.AND P0, PT, R5, 0x1ffffff, PT ;
                       @P0 BRA  ;
                           MOV R4, R23 ;
                           MOV R20, 0x8f10 ;
                           CALL.REL.NOINC  ;
                           BRA  ;
:
                           MUFU.RCP R4, R23 ;
                           FFMA R5, R23, R4, -1 ;
                           FADD.FTZ R5, -R5, -RZ ;
                           FFMA R4, R4, R5, R4 ;
:
                           BSYNC B3 ;
:
                           FMNMX R5, R12, -INF , !PT ;
                           HFMA2.MMA R25, -RZ, RZ, 3.7421875, 0 ;
                           MOV R23, 0x3bbb989d ;
                           ULDC UR6, c[0x0][0x2b0] ;
                           FMNMX R5, R16, R5, !PT ;
                           FFMA R13, R13, R4.reuse, UR6 ;
                           FFMA R14, R14, R4.reuse, UR6 ;
                           FFMA R28, R28, R4, UR6 ;
                           FMNMX R5, R18, R5, !PT ;
                           BSSY B3,  ;
                           FADD R12, R12, -R5.reuse ;
                           FADD R16, R16, -R5.reuse ;
                           FADD R18, R18, -R5 ;
                           FFMA.SAT R20, R12, R23.reuse, 0.5 ;
                           FFMA.SAT R22, R16, R23.reuse, 0.5 ;
                           FFMA.SAT R23, R18, R23, 0.5 ;
                           FFMA.RM R20, R20, R25.reuse, 12582913 ;
                           FFMA.RM R22, R22, R25.reuse, 12582913 ;
                           FFMA.RM R24, R23, R25, 12582913 ;
                           FADD R21, R20, -12583039 ;
                           FADD R5, R22, -12583039 ;
                           FADD R25, R24, -12583039 ;
                           FFMA R21, R12, 1.4426950216293334961, -R21 ;
                           FFMA R5, R16, 1.4426950216293334961, -R5 ;
                           FFMA R25, R18, 1.4426950216293334961, -R25 ;
                           FFMA R21, R12, 1.925963033500011079e-08, R21 ;
                           FFMA R23, R16, 1.925963033500011079e-08, R5 ;
                           FFMA R25, R18, 1.925963033500011079e-08, R25 ;
                           IMAD.SHL.U32 R12, R20, 0x800000, RZ ;
                           SHF.L.U32 R16, R22, 0x17, RZ ;
                           MUFU.EX2 R21, R21 ;
                           SHF.L.U32 R18, R24, 0x17, RZ ;
                           MUFU.EX2 R23, R23 ;
                           MUFU.EX2 R25, R25 ;
                           FMUL R12, R12, R21 ;
                           FADD R5, RZ, R12 ;
                           FMUL R16, R16, R23 ;
                           FADD R5, R5, R16 ;
                           FMUL R18, R18, R25 ;
                           FADD R21, R5, R18 ;
                           IADD3 R5, R21, 0x1800000, RZ ;
                           LOP3.LUT R5, R5, 0x7f800000, RZ, 0xc0, !PT ;
                           ISETP.GT.U32.AND P0, PT, R5, 0x1ffffff, PT ;
                       @P0 BRA  ;
                           IMAD.MOV.U32 R4, RZ, RZ, R21 ;
                           MOV R20, 0x9260 ;
                           CALL.REL.NOINC  ;
                           BRA  ;
:
                           MUFU.RCP R4, R21 ;
                           FFMA R5, R21, R4, -1 ;
                           FADD.FTZ R5, -R5, -RZ ;
                           FFMA R4, R4, R5, R4 ;
:
                           BSYNC B3 ;
:
                           LDC R20, c[0x0][0x2a8] ;
                           ULDC UR12, c[0x0][0x2b0] ;
                           FFMA R12, R12, R4.reuse, UR12 ;
                           FFMA R16, R16, R4.reuse, UR12 ;
                           FFMA R18, R18, R4, UR12 ;
                           ISETP.GE.AND P0, PT, R20, 0x1, PT ;
                      @!P0 BRA  ;
                           ISETP.NE.AND P1, PT, R20.reuse, 0x1, PT ;
                           PLOP3.LUT P0, PT, PT, PT, PT, 0x8, 0x0 ;
                           LOP3.LUT R5, R20, 0x1, RZ, 0xc0, !PT ;
                      @!P1 BRA  ;
                           IADD3 R4, -R5, R20, RZ ;
                           UMOV UR6, URZ ;
                           ULDC UR12, c[0x0][0x2b0] ;
:
                           ISETP.NE.AND P0, PT, RZ, UR6, PT ;
                      @!P0 BRA  ;
                           FADD R20, RZ, R6 ;
                           FADD R21, RZ, R13 ;
                           FADD R23, RZ, R12 ;
                           FADD R20, R7, R20 ;
                           FADD R21, R14, R21 ;
                           FADD R25, R16, R23 ;
                           FADD R20, R3, R20 ;
                           FADD R22, R28, R21 ;
                           FADD R25, R18, R25 ;
                           FADD R20, R20, UR12 ;
                           FADD R23, R22, UR12 ;
                           FADD R29, R25, UR12 ;
                           MUFU.RCP R21, R20 ;
                           MUFU.RCP R24, R23 ;
                           MUFU.RCP R30, R29 ;
                           FFMA R22, -R20, R21, 1 ;
                           FFMA R22, R21, R22, R21 ;
                           FFMA R25, -R23, R24, 1 ;
                           FMUL R6, R6, R22.reuse ;
                           FMUL R7, R7, R22.reuse ;
                           FMUL R3, R3, R22 ;
                           FFMA R25, R24, R25, R24 ;
                           FFMA R31, -R29, R30, 1 ;
                           FMUL R13, R13, R25.reuse ;
                           FMUL R14, R14, R25.reuse ;
                           FMUL R28, R28, R25 ;
                           FFMA R31, R30, R31, R30 ;
                           FMUL R12, R12, R31.reuse ;
                           FMUL R16, R16, R31.reuse ;
                           FMUL R18, R18, R31 ;
:
                           FADD R20, RZ, R6 ;
                           FADD R23, RZ, R7 ;
                           FADD R25, RZ, R3 ;
                           IADD3 R4, R4, -0x2, RZ ;
                           FADD R21, R20, R13 ;
                           FADD R23, R23, R14 ;
                           FADD R25, R25, R28 ;
                           ISETP.NE.AND P0, PT, R4, RZ, PT ;
                           FADD R21, R21, R12 ;
                           FADD R23, R23, R16 ;
                           UIADD3 UR6, UR6, 0x2, URZ ;
                           FADD R21, R21, UR12 ;
                           FADD R22, R23, UR12 ;
                           FADD R23, R25, R18 ;
                           MUFU.RCP R20, R21 ;
                           FADD R29, R23, UR12 ;
                           MUFU.RCP R25, R22 ;
                           MUFU.RCP R30, R29 ;
                           FFMA R23, -R21, R20, 1 ;
                           FFMA R23, R20, R23, R20 ;
                           FFMA R24, -R22, R25, 1 ;
                           FMUL R6, R23.reuse, R6 ;
                           FMUL R13, R23.reuse, R13 ;
                           FMUL R12, R23, R12 ;
                           FFMA R25, R25, R24, R25 ;
                           FADD R20, RZ, R6 ;
                           FADD R21, RZ, R13 ;
                           FADD R23, RZ, R12 ;
                           FFMA R31, -R29, R30, 1 ;
                           FMUL R7, R25.reuse, R7 ;
                           FMUL R14, R25.reuse, R14 ;
                           FMUL R16, R25, R16 ;
                           FFMA R31, R30, R31, R30 ;
                           FADD R20, R7, R20 ;
                           FADD R21, R14, R21 ;
                           FADD R25, R16, R23 ;
                           FMUL R3, R31.reuse, R3 ;
                           FMUL R28, R31.reuse, R28 ;
                           FMUL R18, R31, R18 ;
                           FADD R20, R3, R20 ;
                           FADD R22, R28, R21 ;
                           FADD R25, R18, R25 ;
                           FADD R20, R20, UR12 ;
                           FADD R23, R22, UR12 ;
                           FADD R29, R25, UR12 ;
                           MUFU.RCP R21, R20 ;
                           MUFU.RCP R24, R23 ;
                           MUFU.RCP R30, R29 ;
                           FFMA R22, -R20, R21, 1 ;
                           FFMA R22, R21, R22, R21 ;
                           FFMA R25, -R23, R24, 1 ;
                           FMUL R6, R6, R22.reuse ;
                           FMUL R7, R7, R22.reuse ;
                           FMUL R3, R3, R22 ;
                           FFMA R25, R24, R25, R24 ;
                           FADD R20, RZ, R6 ;
                           FFMA R21, -R29, R30, 1 ;
                           FMUL R13, R13, R25.reuse ;
                           FMUL R14, R14, R25.reuse ;
                           FMUL R28, R28, R25 ;
                           FFMA R21, R30, R21, R30 ;
                           FADD R29, RZ, R7 ;
                           FADD R25, RZ, R3 ;
                           FADD R23, R13, R20 ;
                           FMUL R12, R12, R21.reuse ;
                           FMUL R16, R16, R21.reuse ;
                           FADD R29, R14, R29 ;
                           FMUL R18, R18, R21 ;
                           FADD R25, R28, R25 ;
                           FADD R23, R12, R23 ;
                           FADD R29, R16, R29 ;
                           FADD R25, R18, R25 ;
                           FADD R23, R23, UR12 ;
                           FADD R29, R29, UR12 ;
                           FADD R24, R25, UR12 ;
                           MUFU.RCP R20, R23 ;
                           MUFU.RCP R22, R29 ;
                           MUFU.RCP R31, R24 ;
                           FFMA R21, -R23, R20, 1 ;
                           FFMA R21, R20, R21, R20 ;
                           FFMA R25, -R29, R22, 1 ;
                           FMUL R6, R6, R21.reuse ;
                           FMUL R13, R13, R21.reuse ;
                           FMUL R12, R12, R21 ;
                           FFMA R25, R22, R25, R22 ;
                           FFMA R30, -R24, R31, 1 ;
                           FMUL R7, R7, R25.reuse ;
                           FMUL R14, R14, R25.reuse ;
                           FMUL R16, R16, R25 ;
                           FFMA R31, R31, R30, R31 ;
                           FMUL R3, R3, R31.reuse ;
                           FMUL R28, R28, R31.reuse ;
                           FMUL R18, R18, R31 ;
                       @P0 BRA  ;
                           PLOP3.LUT P0, PT, PT, PT, PT, 0x80, 0x0 ;
:
                           ISETP.NE.AND P1, PT, R5, RZ, PT ;
                      @!P1 BRA  ;
                      @!P0 BRA  ;
                           FADD R4, RZ, R6 ;
                           FADD R5, RZ, R13 ;
                           FADD R21, RZ, R12 ;
                           FADD R4, R7, R4 ;
                           FADD R5, R14, R5 ;
                           FADD R23, R16, R21 ;
                           FADD R4, R3, R4 ;
                           FADD R20, R28, R5 ;
                           FADD R23, R18, R23 ;
                           FADD R4, R4, UR12 ;
                           FADD R21, R20, UR12 ;
                           FADD R24, R23, UR12 ;
                           MUFU.RCP R5, R4 ;
                           MUFU.RCP R22, R21 ;
                           MUFU.RCP R25, R24 ;
                           FFMA R20, -R4, R5, 1 ;
                           FFMA R20, R5, R20, R5 ;
                           FFMA R23, -R21, R22, 1 ;
                           FMUL R6, R6, R20.reuse ;
                           FMUL R7, R7, R20.reuse ;
                           FMUL R3, R3, R20 ;
                           FFMA R23, R22, R23, R22 ;
                           FFMA R30, -R24, R25, 1 ;
                           FMUL R13, R13, R23.reuse ;
                           FMUL R14, R14, R23.reuse ;
                           FMUL R28, R28, R23 ;
                           FFMA R25, R25, R30, R25 ;
                           FMUL R12, R12, R25.reuse ;
                           FMUL R16, R16, R25.reuse ;
                           FMUL R18, R18, R25 ;
:
                           FADD R21, RZ, R7 ;
                           FADD R4, RZ, R6 ;
                           FADD R23, RZ, R3 ;
                           FADD R21, R21, R14 ;
                           FADD R5, R4, R13 ;
                           FADD R23, R23, R28 ;
                           FADD R21, R21, R16 ;
                           FADD R5, R5, R12 ;
                           FADD R20, R21, UR12 ;
                           FADD R21, R23, R18 ;
                           FADD R5, R5, UR12 ;
                           MUFU.RCP R23, R20 ;
                           FADD R24, R21, UR12 ;
                           MUFU.RCP R4, R5 ;
                           MUFU.RCP R25, R24 ;
                           FFMA R22, -R20, R23, 1 ;
                           FFMA R23, R23, R22, R23 ;
                           FFMA R21, -R5, R4, 1 ;
                           FMUL R7, R23.reuse, R7 ;
                           FMUL R14, R23.reuse, R14 ;
                           FMUL R16, R23, R16 ;
                           FFMA R21, R4, R21, R4 ;
                           FFMA R30, -R24, R25, 1 ;
                           FMUL R6, R21.reuse, R6 ;
                           FMUL R13, R21.reuse, R13 ;
                           FMUL R12, R21, R12 ;
                           FFMA R25, R25, R30, R25 ;
                           FMUL R3, R25.reuse, R3 ;
                           FMUL R28, R25.reuse, R28 ;
                           FMUL R18, R25, R18 ;
                           BRA  ;
:
                           FMNMX R4, R34, -INF , !PT ;
                           HFMA2.MMA R23, -RZ, RZ, 0.96630859375, -0.0022525787353515625 ;
                           IMAD.MOV.U32 R24, RZ, RZ, 0x437c0000 ;
                           BSSY B3,  ;
                           FMNMX R4, R7, R4, !PT ;
                           FMNMX R5, R3, R4, !PT ;
                           FMNMX R4, R0, R5, !PT ;
                           FADD R34, -R4, R34 ;
                           FADD R6, R7, -R4.reuse ;
                           FADD R21, R3, -R4.reuse ;
                           FADD R4, R0, -R4 ;
                           FFMA.SAT R5, R34, R23.reuse, 0.5 ;
                           FFMA.SAT R20, R6, R23.reuse, 0.5 ;
                           FFMA.SAT R22, R21, R23.reuse, 0.5 ;
                           FFMA.SAT R23, R4, R23, 0.5 ;
                           FFMA.RM R5, R5, R24.reuse, 12582913 ;
                           FFMA.RM R20, R20, R24.reuse, 12582913 ;
                           FFMA.RM R22, R22, R24.reuse, 12582913 ;
                           FFMA.RM R23, R23, R24, 12582913 ;
                           FADD R7, R5, -12583039 ;
                           FADD R3, R20, -12583039 ;
                           FADD R0, R22, -12583039 ;
                           FADD R25, R23, -12583039 ;
                           FFMA R7, R34, 1.4426950216293334961, -R7 ;
                           FFMA R3, R6, 1.4426950216293334961, -R3 ;
                           FFMA R0, R21.reuse, 1.4426950216293334961, -R0 ;
                           FFMA R25, R4, 1.4426950216293334961, -R25 ;
                           FFMA R7, R34, 1.925963033500011079e-08, R7 ;
                           FFMA R3, R6, 1.925963033500011079e-08, R3 ;
                           FFMA R21, R21, 1.925963033500011079e-08, R0 ;
                           FFMA R25, R4, 1.925963033500011079e-08, R25 ;
                           SHF.L.U32 R6, R5, 0x17, RZ ;
                           IMAD.SHL.U32 R23, R23, 0x800000, RZ ;
                           MUFU.EX2 R7, R7 ;
                           SHF.L.U32 R20, R20, 0x17, RZ ;
                           SHF.L.U32 R22, R22, 0x17, RZ ;
                           MUFU.EX2 R3, R3 ;
                           MUFU.EX2 R21, R21 ;
                           FMUL R6, R6, R7 ;
                           FADD R0, RZ, R6 ;
                           MUFU.EX2 R24, R25 ;
                           FMUL R7, R20, R3 ;
                           FADD R4, R0, R7 ;
                           FMUL R3, R22, R21 ;
                           FADD R5, R4, R3 ;
                           FMUL R0, R23, R24 ;
                           FADD R21, R5, R0 ;
                           IADD3 R4, R21, 0x1800000, RZ ;
                           LOP3.LUT R4, R4, 0x7f800000, RZ, 0xc0, !PT ;
                           ISETP.GT.U32.AND P0, PT, R4, 0x1ffffff, PT ;
                       @P0 BRA  ;
                           MOV R4, R21 ;
                           MOV R20, 0xa2f0 ;
                           CALL.REL.NOINC  ;
                           BRA  ;
:
                           MUFU.RCP R4, R21 ;
                           FFMA R5, R21, R4, -1 ;
                           FADD.FTZ R5, -R5, -RZ ;
                           FFMA R4, R4, R5, R4 ;
:
                           BSYNC B3 ;
:
                           FMNMX R5, R13, -INF , !PT ;
                           IMAD.MOV.U32 R29, RZ, RZ, 0x437c0000 ;
                           MOV R30, 0x3bbb989d ;
                           ULDC UR6, c[0x0][0x2b0] ;
                           FMNMX R5, R14, R5, !PT ;
                           FFMA R6, R6, R4.reuse, UR6 ;
                           FFMA R7, R7, R4.reuse, UR6 ;
                           FFMA R3, R3, R4.reuse, UR6 ;
                           FMNMX R20, R28, R5, !PT ;
                           FFMA R0, R0, R4, UR6 ;
                           BSSY B3,  ;
                           FMNMX R5, R19, R20, !PT ;
                           FADD R13, R13, -R5.reuse ;
                           FADD R21, R14, -R5.reuse ;
                           FADD R28, R28, -R5.reuse ;
                           FADD R25, R19, -R5 ;
                           FFMA.SAT R20, R13, R30.reuse, 0.5 ;
                           FFMA.SAT R22, R21, R30.reuse, 0.5 ;
                           FFMA.SAT R23, R28, R30, 0.5 ;
                           FFMA.RM R20, R20, R29.reuse, 12582913 ;
                           FFMA.RM R22, R22, R29.reuse, 12582913 ;
                           FFMA.RM R23, R23, R29, 12582913 ;
                           FADD R14, R20, -12583039 ;
                           FADD R24, R22.reuse, -12583039 ;
                           FADD R5, R23, -12583039 ;
                           SHF.L.U32 R22, R22, 0x17, RZ ;
                           FFMA R14, R13, 1.4426950216293334961, -R14 ;
                           FFMA R24, R21, 1.4426950216293334961, -R24 ;
                           FFMA R14, R13, 1.925963033500011079e-08, R14 ;
                           FFMA.SAT R13, R25, R30, 0.5 ;
                           FFMA R24, R21, 1.925963033500011079e-08, R24 ;
                           FFMA.RM R21, R13, R29, 12582913 ;
                           FFMA R13, R28.reuse, 1.4426950216293334961, -R5 ;
                           MUFU.EX2 R14, R14 ;
                           FADD R30, R21.reuse, -12583039 ;
                           FFMA R19, R28, 1.925963033500011079e-08, R13 ;
                           SHF.L.U32 R13, R20, 0x17, RZ ;
                           IMAD.SHL.U32 R21, R21, 0x800000, RZ ;
                           FFMA R30, R25, 1.4426950216293334961, -R30 ;
                           SHF.L.U32 R28, R23, 0x17, RZ ;
                           MUFU.EX2 R5, R24 ;
                           FFMA R30, R25, 1.925963033500011079e-08, R30 ;
                           MUFU.EX2 R19, R19 ;
                           FMUL R13, R13, R14 ;
                           MUFU.EX2 R30, R30 ;
                           FMUL R14, R22, R5 ;
                           FADD R5, RZ, R13 ;
                           FADD R5, R5, R14 ;
                           FMUL R28, R28, R19 ;
                           FADD R20, R5, R28 ;
                           FMUL R19, R21, R30 ;
                           FADD R21, R20, R19 ;
                           IADD3 R5, R21, 0x1800000, RZ ;
                           LOP3.LUT R5, R5, 0x7f800000, RZ, 0xc0, !PT ;
                           ISETP.GT.U32.AND P0, PT, R5, 0x1ffffff, PT ;
                       @P0 BRA  ;
                           MOV R4, R21 ;
                           MOV R20, 0xa700 ;
                           CALL.REL.NOINC  ;
                           BRA  ;
:
                           MUFU.RCP R4, R21 ;
                           FFMA R5, R21, R4, -1 ;
                           FADD.FTZ R5, -R5, -RZ ;
                           FFMA R4, R4, R5, R4 ;
:
                           BSYNC B3 ;
:
                           FMNMX R5, R12, -INF , !PT ;
                           HFMA2.MMA R25, -RZ, RZ, 0.96630859375, -0.0022525787353515625 ;
                           IMAD.MOV.U32 R29, RZ, RZ, 0x437c0000 ;
                           ULDC UR6, c[0x0][0x2b0] ;
                           FMNMX R5, R16, R5, !PT ;
                           FFMA R13, R13, R4.reuse, UR6 ;
                           FFMA R14, R14, R4.reuse, UR6 ;
                           FFMA R28, R28, R4.reuse, UR6 ;
                           FMNMX R5, R18, R5, !PT ;
                           FFMA R19, R19, R4, UR6 ;
                           BSSY B3,  ;
                           FMNMX R5, R26, R5, !PT ;
                           FADD R12, R12, -R5.reuse ;
                           FADD R16, R16, -R5.reuse ;
                           FADD R18, R18, -R5.reuse ;
                           FADD R26, R26, -R5 ;
                           FFMA.SAT R20, R12, R25.reuse, 0.5 ;
                           FFMA.SAT R22, R16, R25.reuse, 0.5 ;
                           FFMA.SAT R24, R18, R25, 0.5 ;
                           FFMA.RM R20, R20, R29.reuse, 12582913 ;
                           FFMA.RM R22, R22, R29.reuse, 12582913 ;
                           FFMA.RM R24, R24, R29, 12582913 ;
                           FADD R21, R20, -12583039 ;
                           FADD R23, R22, -12583039 ;
                           FADD R5, R24, -12583039 ;
                           FFMA R21, R12, 1.4426950216293334961, -R21 ;
                           FFMA R23, R16, 1.4426950216293334961, -R23 ;
                           FFMA R5, R18, 1.4426950216293334961, -R5 ;
                           FFMA R21, R12, 1.925963033500011079e-08, R21 ;
                           FFMA.SAT R12, R26, R25, 0.5 ;
                           FFMA R23, R16, 1.925963033500011079e-08, R23 ;
                           FFMA R25, R18, 1.925963033500011079e-08, R5 ;
                           SHF.L.U32 R16, R22, 0x17, RZ ;
                           FFMA.RM R29, R12, R29, 12582913 ;
                           MUFU.EX2 R21, R21 ;
                           SHF.L.U32 R12, R20, 0x17, RZ ;
                           FADD R31, R29, -12583039 ;
                           SHF.L.U32 R18, R24, 0x17, RZ ;
                           FFMA R31, R26.reuse, 1.4426950216293334961, -R31 ;
                           MUFU.EX2 R23, R23 ;
                           FFMA R31, R26, 1.925963033500011079e-08, R31 ;
                           IMAD.SHL.U32 R26, R29, 0x800000, RZ ;
                           MUFU.EX2 R25, R25 ;
                           FMUL R12, R12, R21 ;
                           FADD R5, RZ, R12 ;
                           MUFU.EX2 R31, R31 ;
                           FMUL R16, R16, R23 ;
                           FADD R5, R5, R16 ;
                           FMUL R18, R18, R25 ;
                           FADD R5, R5, R18 ;
                           FMUL R26, R26, R31 ;
                           FADD R21, R5, R26 ;
                           IADD3 R5, R21, 0x1800000, RZ ;
                           LOP3.LUT R5, R5, 0x7f800000, RZ, 0xc0, !PT ;
                           ISETP.GT.U32.AND P0, PT, R5, 0x1ffffff, PT ;
                       @P0 BRA  ;
                           MOV R4, R21 ;
                           MOV R20, 0xab10 ;
                           CALL.REL.NOINC  ;
                           BRA  ;
:
                           MUFU.RCP R4, R21 ;
                           FFMA R5, R21, R4, -1 ;
                           FADD.FTZ R5, -R5, -RZ ;
                           FFMA R4, R4, R5, R4 ;
:
                           BSYNC B3 ;
:
                           FMNMX R20, R10, -INF , !PT ;
                           IMAD.MOV.U32 R29, RZ, RZ, 0x437c0000 ;
                           MOV R25, 0x3bbb989d ;
                           ULDC UR6, c[0x0][0x2b0] ;
                           FMNMX R5, R11, R20, !PT ;
                           FFMA R12, R12, R4.reuse, UR6 ;
                           FFMA R16, R16, R4.reuse, UR6 ;
                           FFMA R18, R18, R4.reuse, UR6 ;
                           FMNMX R20, R8, R5, !PT ;
                           FFMA R26, R26, R4, UR6 ;
                           BSSY B3,  ;
                           FMNMX R20, R9, R20, !PT ;
                           FADD R10, R10, -R20.reuse ;
                           FADD R21, R11, -R20.reuse ;
                           FADD R23, R8, -R20.reuse ;
                           FADD R20, R9, -R20 ;
                           FFMA.SAT R5, R10, R25.reuse, 0.5 ;
                           FFMA.SAT R22, R21, R25.reuse, 0.5 ;
                           FFMA.SAT R24, R23, R25.reuse, 0.5 ;
                           FFMA.SAT R9, R20, R25, 0.5 ;
                           FFMA.RM R5, R5, R29.reuse, 12582913 ;
                           FFMA.RM R22, R22, R29.reuse, 12582913 ;
                           FFMA.RM R24, R24, R29, 12582913 ;
                           FADD R11, R5, -12583039 ;
                           FADD R8, R22.reuse, -12583039 ;
                           SHF.L.U32 R22, R22, 0x17, RZ ;
                           FFMA R11, R10, 1.4426950216293334961, -R11 ;
                           FFMA R8, R21, 1.4426950216293334961, -R8 ;
                           FFMA R11, R10, 1.925963033500011079e-08, R11 ;
                           FADD R10, R24.reuse, -12583039 ;
                           FFMA R8, R21, 1.925963033500011079e-08, R8 ;
                           FFMA.RM R21, R9, R29, 12582913 ;
                           SHF.L.U32 R24, R24, 0x17, RZ ;
                           FFMA R10, R23, 1.4426950216293334961, -R10 ;
                           MUFU.EX2 R11, R11 ;
                           FADD R25, R21, -12583039 ;
                           FFMA R23, R23, 1.925963033500011079e-08, R10 ;
                           SHF.L.U32 R10, R5, 0x17, RZ ;
                           FFMA R25, R20, 1.4426950216293334961, -R25 ;
                           MUFU.EX2 R9, R8 ;
                           FFMA R25, R20, 1.925963033500011079e-08, R25 ;
                           MUFU.EX2 R23, R23 ;
                           FMUL R10, R10, R11 ;
                           FADD R20, RZ, R10 ;
                           MUFU.EX2 R30, R25 ;
                           FMUL R11, R22, R9 ;
                           IMAD.SHL.U32 R9, R21, 0x800000, RZ ;
                           FADD R5, R20, R11 ;
                           FMUL R8, R24, R23 ;
                           FADD R20, R5, R8 ;
                           FMUL R9, R9, R30 ;
                           FADD R21, R20, R9 ;
                           IADD3 R5, R21, 0x1800000, RZ ;
                           LOP3.LUT R5, R5, 0x7f800000, RZ, 0xc0, !PT ;
                           ISETP.GT.U32.AND P0, PT, R5, 0x1ffffff, PT ;
                       @P0 BRA  ;
                           MOV R4, R21 ;
                           MOV R20, 0xaf20 ;
                           CALL.REL.NOINC  ;
                           BRA  ;
:
                           MUFU.RCP R4, R21 ;
                           FFMA R5, R21, R4, -1 ;
                           FADD.FTZ R5, -R5, -RZ ;
                           FFMA R4, R4, R5, R4 ;
:
                           BSYNC B3 ;
:
                           LDC R5, c[0x0][0x2a8] ;
                           ULDC UR6, c[0x0][0x2b0] ;
                           FFMA R10, R10, R4.reuse, UR6 ;
                           FFMA R11, R11, R4.reuse, UR6 ;
                           FFMA R8, R8, R4.reuse, UR6 ;
                           FFMA R9, R9, R4, UR6 ;
                           ISETP.GE.AND P0, PT, R5, 0x1, PT ;
                      @!P0 BRA  ;
                           UMOV UR6, URZ ;
                           ULDC UR12, c[0x0][0x2b0] ;
:
                           ISETP.NE.AND P0, PT, RZ, UR6, PT ;
                      @!P0 BRA  ;
                           FADD R4, RZ, R6 ;
                           FADD R21, RZ, R13 ;
                           FADD R22, RZ, R10 ;
                           FADD R4, R7, R4 ;
                           FADD R21, R14, R21 ;
                           FADD R23, R11, R22 ;
                           FADD R5, R3, R4 ;
                           FADD R20, R28, R21 ;
                           FADD R24, R8, R23 ;
                           FADD R4, R0, R5 ;
                           FADD R5, RZ, R12 ;
                           FADD R20, R19, R20 ;
                           FADD R4, R4, UR12 ;
                           FADD R21, R16, R5 ;
                           FADD R20, R20, UR12 ;
                           MUFU.RCP R5, R4 ;
                           FADD R21, R18, R21 ;
                           FADD R22, R26, R21 ;
                           MUFU.RCP R21, R20 ;
                           FADD R23, R22, UR12 ;
                           FADD R22, R9, R24 ;
                           FADD R29, R22, UR12 ;
                           MUFU.RCP R24, R23 ;
                           FFMA R4, -R4, R5, 1 ;
                           FFMA R4, R5, R4, R5 ;
                           MUFU.RCP R30, R29 ;
                           FFMA R22, -R20, R21, 1 ;
                           FMUL R6, R6, R4.reuse ;
                           FMUL R7, R7, R4.reuse ;
                           FMUL R3, R3, R4 ;
                           FFMA R22, R21, R22, R21 ;
                           FMUL R0, R0, R4 ;
                           FFMA R25, -R23, R24, 1 ;
                           FMUL R13, R13, R22.reuse ;
                           FMUL R14, R14, R22.reuse ;
                           FMUL R28, R28, R22.reuse ;
                           FFMA R25, R24, R25, R24 ;
                           FMUL R19, R19, R22 ;
                           FFMA R31, -R29, R30, 1 ;
                           FMUL R12, R12, R25.reuse ;
                           FMUL R16, R16, R25.reuse ;
                           FMUL R18, R18, R25 ;
                           FFMA R31, R30, R31, R30 ;
                           FMUL R26, R26, R25 ;
                           FMUL R10, R10, R31.reuse ;
                           FMUL R11, R11, R31.reuse ;
                           FMUL R8, R8, R31.reuse ;
                           FMUL R9, R9, R31 ;
:
                           FADD R4, RZ, R6 ;
                           FADD R21, RZ, R7 ;
                           FADD R22, RZ, R0 ;
                           LDC R32, c[0x0][0x2a8] ;
                           FADD R5, R4, R13 ;
                           FADD R21, R21, R14 ;
                           FADD R23, R22, R19 ;
                           UIADD3 UR6, UR6, 0x1, URZ ;
                           FADD R5, R5, R12 ;
                           FADD R20, R21, R16 ;
                           FADD R24, R23, R26 ;
                           FADD R4, R5, R10 ;
                           FADD R5, RZ, R3 ;
                           FADD R20, R20, R11 ;
                           FADD R4, R4, UR12 ;
                           FADD R21, R5, R28 ;
                           FADD R20, R20, UR12 ;
                           MUFU.RCP R5, R4 ;
                           FADD R21, R21, R18 ;
                           FADD R22, R21, R8 ;
                           ISETP.LE.AND P0, PT, R32, UR6, PT ;
                           MUFU.RCP R21, R20 ;
                           FADD R23, R22, UR12 ;
                           FADD R22, R24, R9 ;
                           FADD R29, R22, UR12 ;
                           MUFU.RCP R24, R23 ;
                           FFMA R4, -R4, R5, 1 ;
                           FFMA R5, R5, R4, R5 ;
                           MUFU.RCP R30, R29 ;
                           FFMA R22, -R20, R21, 1 ;
                           FMUL R6, R5.reuse, R6 ;
                           FMUL R13, R5.reuse, R13 ;
                           FMUL R12, R5, R12 ;
                           FFMA R22, R21, R22, R21 ;
                           FMUL R10, R5, R10 ;
                           FFMA R25, -R23, R24, 1 ;
                           FMUL R7, R22.reuse, R7 ;
                           FMUL R14, R22.reuse, R14 ;
                           FMUL R16, R22, R16 ;
                           FFMA R25, R24, R25, R24 ;
                           FMUL R11, R22, R11 ;
                           FFMA R31, -R29, R30, 1 ;
                           FMUL R3, R25.reuse, R3 ;
                           FMUL R28, R25.reuse, R28 ;
                           FMUL R18, R25.reuse, R18 ;
                           FFMA R31, R30, R31, R30 ;
                           FMUL R8, R25, R8 ;
                           FMUL R0, R31.reuse, R0 ;
                           FMUL R19, R31.reuse, R19 ;
                           FMUL R26, R31.reuse, R26 ;
                           FMUL R9, R31, R9 ;
                      @!P0 BRA  ;
                           BRA  ;
:
                           FMNMX R5, R34, -INF , !PT ;
                           BSSY B3,  ;
                           MOV R21, 0x3bbb989d ;
                           FADD R34, -R5, R34 ;
                           IMAD.MOV.U32 R5, RZ, RZ, 0x437c0000 ;
                           FFMA.SAT R4, R34, R21, 0.5 ;
                           FFMA.RM R4, R4, R5, 12582913 ;
                           FADD R5, R4.reuse, -12583039 ;
                           SHF.L.U32 R6, R4, 0x17, RZ ;
                           FFMA R5, R34, 1.4426950216293334961, -R5 ;
                           FFMA R5, R34, 1.925963033500011079e-08, R5 ;
                           MUFU.EX2 R5, R5 ;
                           FMUL R6, R6, R5 ;
                           FADD R21, RZ, R6 ;
                           IADD3 R4, R21, 0x1800000, RZ ;
                           LOP3.LUT R4, R4, 0x7f800000, RZ, 0xc0, !PT ;
                           ISETP.GT.U32.AND P0, PT, R4, 0x1ffffff, PT ;
                       @P0 BRA  ;
                           MOV R4, R21 ;
                           MOV R20, 0xb7e0 ;
                           CALL.REL.NOINC  ;
                           BRA  ;
:
                           MUFU.RCP R4, R21 ;
                           FFMA R5, R21, R4, -1 ;
                           FADD.FTZ R5, -R5, -RZ ;
                           FFMA R4, R4, R5, R4 ;
:
                           BSYNC B3 ;
:
                           LDC R20, c[0x0][0x2a8] ;
                           ULDC UR6, c[0x0][0x2b0] ;
                           FFMA R6, R6, R4, UR6 ;
                           ISETP.GE.AND P0, PT, R20, 0x1, PT ;
                      @!P0 BRA  ;
                           VIADD R4, R20.reuse, 0xffffffff ;
                           UMOV UR6, URZ ;
                           LOP3.LUT R5, R20, 0x3, RZ, 0xc0, !PT ;
                           ISETP.GE.U32.AND P0, PT, R4, 0x3, PT ;
                      @!P0 BRA  ;
                           IADD3 R4, -R5, R20, RZ ;
                           UMOV UR6, URZ ;
                           ULDC UR12, c[0x0][0x2b0] ;
:
                           ISETP.NE.AND P0, PT, RZ, UR6, PT ;
                      @!P0 BRA  ;
                           FADD R20, RZ, R6 ;
                           FADD R20, R20, UR12 ;
                           MUFU.RCP R21, R20 ;
                           FFMA R22, -R20, R21, 1 ;
                           FFMA R21, R21, R22, R21 ;
                           FMUL R6, R6, R21 ;
:
                           FADD R20, RZ, R6 ;
                           IADD3 R4, R4, -0x4, RZ ;
                           UIADD3 UR6, UR6, 0x4, URZ ;
                           FADD R20, R20, UR12 ;
                           ISETP.NE.AND P0, PT, R4, RZ, PT ;
                           MUFU.RCP R21, R20 ;
                           FFMA R22, -R20, R21, 1 ;
                           FFMA R21, R21, R22, R21 ;
                           FMUL R21, R21, R6 ;
                           FADD R6, RZ, R21 ;
                           FADD R6, R6, UR12 ;
                           MUFU.RCP R23, R6 ;
                           FFMA R22, -R6, R23, 1 ;
                           FFMA R22, R23, R22, R23 ;
                           FMUL R22, R21, R22 ;
                           FADD R21, RZ, R22 ;
                           FADD R21, R21, UR12 ;
                           MUFU.RCP R20, R21 ;
                           FFMA R23, -R21, R20, 1 ;
                           FFMA R23, R20, R23, R20 ;
                           FMUL R23, R22, R23 ;
                           FADD R20, RZ, R23 ;
                           FADD R20, R20, UR12 ;
                           MUFU.RCP R25, R20 ;
                           FFMA R6, -R20, R25, 1 ;
                           FFMA R6, R25, R6, R25 ;
                           FMUL R6, R23, R6 ;
                           FADD R22, RZ, R6 ;
                           FADD R22, R22, UR12 ;
                           MUFU.RCP R21, R22 ;
                           FFMA R24, -R22, R21, 1 ;
                           FFMA R21, R21, R24, R21 ;
                           FMUL R21, R6, R21 ;
                           FADD R6, RZ, R21 ;
                           FADD R6, R6, UR12 ;
                           MUFU.RCP R23, R6 ;
                           FFMA R20, -R6, R23, 1 ;
                           FFMA R20, R23, R20, R23 ;
                           FMUL R20, R21, R20 ;
                           FADD R21, RZ, R20 ;
                           FADD R21, R21, UR12 ;
                           MUFU.RCP R22, R21 ;
                           FFMA R23, -R21, R22, 1 ;
                           FFMA R23, R22, R23, R22 ;
                           FMUL R6, R20, R23 ;
                       @P0 BRA  ;
:
                           ISETP.NE.AND P0, PT, R5, RZ, PT ;
                           ULDC UR12, c[0x0][0x2b0] ;
                      @!P0 BRA  ;
:
                           ISETP.NE.AND P0, PT, RZ, UR6, PT ;
                      @!P0 BRA  ;
                           FADD R4, RZ, R6 ;
                           FADD R4, R4, UR12 ;
                           MUFU.RCP R21, R4 ;
                           FFMA R20, -R4, R21, 1 ;
                           FFMA R21, R21, R20, R21 ;
                           FMUL R6, R6, R21 ;
:
                           FADD R4, RZ, R6 ;
                           IADD3 R5, R5, -0x1, RZ ;
                           FADD R4, R4, UR12 ;
                           ISETP.NE.AND P0, PT, R5, RZ, PT ;
                           MUFU.RCP R21, R4 ;
                           FFMA R20, -R4, R21, 1 ;
                           FFMA R21, R21, R20, R21 ;
                           FMUL R6, R21, R6 ;
                      @!P0 BRA  ;
                           UIADD3 UR6, UR6, 0x1, URZ ;
                           BRA  ;
:
                           FMNMX R4, R34, -INF , !PT ;
                           IMAD.MOV.U32 R6, RZ, RZ, 0x3bbb989d ;
                           MOV R21, 0x437c0000 ;
                           BSSY B3,  ;
                           FMNMX R5, R7, R4, !PT ;
                           FADD R34, -R5, R34 ;
                           FADD R7, R7, -R5 ;
                           FFMA.SAT R4, R34, R6.reuse, 0.5 ;
                           FFMA.SAT R6, R7, R6, 0.5 ;
                           FFMA.RM R4, R4, R21.reuse, 12582913 ;
                           FFMA.RM R20, R6, R21, 12582913 ;
                           FADD R5, R4, -12583039 ;
                           FADD R6, R20, -12583039 ;
                           FFMA R5, R34, 1.4426950216293334961, -R5 ;
                           FFMA R6, R7, 1.4426950216293334961, -R6 ;
                           FFMA R5, R34, 1.925963033500011079e-08, R5 ;
                           FFMA R21, R7, 1.925963033500011079e-08, R6 ;
                           SHF.L.U32 R6, R4, 0x17, RZ ;
                           SHF.L.U32 R7, R20, 0x17, RZ ;
                           MUFU.EX2 R22, R21 ;
                           MUFU.EX2 R5, R5 ;
                           FMUL R7, R7, R22 ;
                           FMUL R6, R6, R5 ;
                           FADD R4, RZ, R6 ;
                           FADD R23, R4, R7 ;
                           VIADD R4, R23, 0x1800000 ;
                           LOP3.LUT R4, R4, 0x7f800000, RZ, 0xc0, !PT ;
                           ISETP.GT.U32.AND P0, PT, R4, 0x1ffffff, PT ;
                       @P0 BRA  ;
                           MOV R4, R23 ;
                           MOV R20, 0xbfd0 ;
                           CALL.REL.NOINC  ;
                           BRA  ;
:
                           MUFU.RCP R4, R23 ;
                           FFMA R5, R23, R4, -1 ;
                           FADD.FTZ R5, -R5, -RZ ;
                           FFMA R4, R4, R5, R4 ;
:
                           BSYNC B3 ;
:
                           FMNMX R5, R13, -INF , !PT ;
                           HFMA2.MMA R20, -RZ, RZ, 0.96630859375, -0.0022525787353515625 ;
                           MOV R22, 0x437c0000 ;
                           ULDC UR6, c[0x0][0x2b0] ;
                           FMNMX R21, R14, R5, !PT ;
                           FFMA R6, R6, R4.reuse, UR6 ;
                           FFMA R7, R7, R4, UR6 ;
                           BSSY B3,  ;
                           FADD R13, R13, -R21.reuse ;
                           FADD R21, R14, -R21 ;
                           FFMA.SAT R5, R13, R20.reuse, 0.5 ;
                           FFMA.SAT R20, R21, R20, 0.5 ;
                           FFMA.RM R5, R5, R22.reuse, 12582913 ;
                           FFMA.RM R22, R20, R22, 12582913 ;
                           FADD R14, R5, -12583039 ;
                           FADD R24, R22, -12583039 ;
                           FFMA R14, R13, 1.4426950216293334961, -R14 ;
                           FFMA R24, R21, 1.4426950216293334961, -R24 ;
                           FFMA R20, R13, 1.925963033500011079e-08, R14 ;
                           FFMA R24, R21, 1.925963033500011079e-08, R24 ;
                           IMAD.SHL.U32 R13, R5, 0x800000, RZ ;
                           SHF.L.U32 R14, R22, 0x17, RZ ;
                           MUFU.EX2 R21, R24 ;
                           MUFU.EX2 R20, R20 ;
                           FMUL R14, R14, R21 ;
                           FMUL R13, R13, R20 ;
                           FADD R5, RZ, R13 ;
                           FADD R21, R5, R14 ;
                           IADD3 R5, R21, 0x1800000, RZ ;
                           LOP3.LUT R5, R5, 0x7f800000, RZ, 0xc0, !PT ;
                           ISETP.GT.U32.AND P0, PT, R5, 0x1ffffff, PT ;
                       @P0 BRA  ;
                           MOV R4, R21 ;
                           MOV R20, 0xc260 ;
                           CALL.REL.NOINC  ;
                           BRA  ;
:
                           MUFU.RCP R4, R21 ;
                           FFMA R5, R21, R4, -1 ;
                           FADD.FTZ R5, -R5, -RZ ;
                           FFMA R4, R4, R5, R4 ;
:
                           BSYNC B3 ;
:
                           LDC R20, c[0x0][0x2a8] ;
                           ULDC UR12, c[0x0][0x2b0] ;
                           FFMA R13, R13, R4.reuse, UR12 ;
                           FFMA R14, R14, R4, UR12 ;
                           ISETP.GE.AND P0, PT, R20, 0x1, PT ;
                      @!P0 BRA  ;
                           ISETP.NE.AND P1, PT, R20.reuse, 0x1, PT ;
                           PLOP3.LUT P0, PT, PT, PT, PT, 0x8, 0x0 ;
                           LOP3.LUT R5, R20, 0x1, RZ, 0xc0, !PT ;
                      @!P1 BRA  ;
                           IMAD.IADD R4, R20, 0x1, -R5 ;
                           UMOV UR6, URZ ;
                           ULDC UR12, c[0x0][0x2b0] ;
:
                           ISETP.NE.AND P0, PT, RZ, UR6, PT ;
                      @!P0 BRA  ;
                           FADD R20, RZ, R6 ;
                           FADD R21, RZ, R13 ;
                           FADD R20, R7, R20 ;
                           FADD R23, R14, R21 ;
                           FADD R20, R20, UR12 ;
                           FADD R23, R23, UR12 ;
                           MUFU.RCP R21, R20 ;
                           MUFU.RCP R24, R23 ;
                           FFMA R22, -R20, R21, 1 ;
                           FFMA R22, R21, R22, R21 ;
                           FFMA R25, -R23, R24, 1 ;
                           FMUL R6, R6, R22.reuse ;
                           FMUL R7, R7, R22 ;
                           FFMA R25, R24, R25, R24 ;
                           FMUL R13, R13, R25.reuse ;
                           FMUL R14, R14, R25 ;
:
                           FADD R20, RZ, R6 ;
                           FADD R21, RZ, R7 ;
                           IADD3 R4, R4, -0x2, RZ ;
                           UIADD3 UR6, UR6, 0x2, URZ ;
                           FADD R20, R20, R13 ;
                           FADD R23, R21, R14 ;
                           ISETP.NE.AND P0, PT, R4, RZ, PT ;
                           FADD R20, R20, UR12 ;
                           FADD R23, R23, UR12 ;
                           MUFU.RCP R21, R20 ;
                           MUFU.RCP R24, R23 ;
                           FFMA R22, -R20, R21, 1 ;
                           FFMA R22, R21, R22, R21 ;
                           FFMA R25, -R23, R24, 1 ;
                           FMUL R6, R22.reuse, R6 ;
                           FMUL R13, R22, R13 ;
                           FFMA R25, R24, R25, R24 ;
                           FADD R24, RZ, R6 ;
                           FADD R21, RZ, R13 ;
                           FMUL R7, R25.reuse, R7 ;
                           FMUL R14, R25, R14 ;
                           FADD R24, R7, R24 ;
                           FADD R20, R14, R21 ;
                           FADD R24, R24, UR12 ;
                           FADD R22, R20, UR12 ;
                           MUFU.RCP R21, R24 ;
                           MUFU.RCP R23, R22 ;
                           FFMA R20, -R24, R21, 1 ;
                           FFMA R20, R21, R20, R21 ;
                           FFMA R30, -R22, R23, 1 ;
                           FMUL R6, R6, R20.reuse ;
                           FMUL R7, R7, R20 ;
                           FFMA R30, R23, R30, R23 ;
                           FADD R32, RZ, R6 ;
                           FADD R21, RZ, R7 ;
                           FMUL R13, R13, R30.reuse ;
                           FMUL R14, R14, R30 ;
                           FADD R32, R13, R32 ;
                           FADD R20, R14, R21 ;
                           FADD R32, R32, UR12 ;
                           FADD R22, R20, UR12 ;
                           MUFU.RCP R21, R32 ;
                           MUFU.RCP R23, R22 ;
                           FFMA R20, -R32, R21, 1 ;
                           FFMA R20, R21, R20, R21 ;
                           FFMA R24, -R22, R23, 1 ;
                           FMUL R6, R6, R20.reuse ;
                           FMUL R13, R13, R20 ;
                           FFMA R24, R23, R24, R23 ;
                           FMUL R7, R7, R24.reuse ;
                           FMUL R14, R14, R24 ;
                       @P0 BRA  ;
                           PLOP3.LUT P0, PT, PT, PT, PT, 0x80, 0x0 ;
:
                           ISETP.NE.AND P1, PT, R5, RZ, PT ;
                      @!P1 BRA  ;
                      @!P0 BRA  ;
                           FADD R4, RZ, R6 ;
                           FADD R5, RZ, R13 ;
                           FADD R4, R7, R4 ;
                           FADD R20, R14, R5 ;
                           FADD R4, R4, UR12 ;
                           FADD R21, R20, UR12 ;
                           MUFU.RCP R5, R4 ;
                           MUFU.RCP R22, R21 ;
                           FFMA R20, -R4, R5, 1 ;
                           FFMA R20, R5, R20, R5 ;
                           FFMA R23, -R21, R22, 1 ;
                           FMUL R6, R6, R20.reuse ;
                           FMUL R7, R7, R20 ;
                           FFMA R23, R22, R23, R22 ;
                           FMUL R13, R13, R23.reuse ;
                           FMUL R14, R14, R23 ;
:
                           FADD R4, RZ, R6 ;
                           FADD R5, RZ, R7 ;
                           FADD R4, R4, R13 ;
                           FADD R20, R5, R14 ;
                           FADD R4, R4, UR12 ;
                           FADD R21, R20, UR12 ;
                           MUFU.RCP R5, R4 ;
                           MUFU.RCP R22, R21 ;
                           FFMA R20, -R4, R5, 1 ;
                           FFMA R20, R5, R20, R5 ;
                           FFMA R23, -R21, R22, 1 ;
                           FMUL R6, R20.reuse, R6 ;
                           FMUL R13, R20, R13 ;
                           FFMA R23, R22, R23, R22 ;
                           FMUL R7, R23.reuse, R7 ;
                           FMUL R14, R23, R14 ;
:
                           BSYNC B1 ;
:
                           LDC R4, c[0x0][0x2a0] ;
                           ISETP.NE.AND P3, PT, R2, RZ, PT ;
                           BSSY B0,  ;
                           ISETP.NE.AND P6, PT, R27, RZ, PT ;
                           ISETP.GT.AND P2, PT, R4.reuse, 0x1, PT ;
                           ISETP.GT.AND P0, PT, R4, 0x3, PT ;
                           ISETP.EQ.AND P4, PT, R2.reuse, 0x1, P2 ;
                           ISETP.EQ.AND P5, PT, R2, 0x3, P0 ;
                           ISETP.GT.AND P3, PT, R4.reuse, RZ, !P3 ;
                           IADD3 R5, R4.reuse, 0x1, RZ ;
                           ISETP.GT.AND P1, PT, R4.reuse, 0x2, PT ;
                           IADD3 R21, R4, 0x3, RZ ;
                      @!P4 FSEL R7, R6, RZ, P3 ;
                           ISETP.EQ.AND P3, PT, R5.reuse, R2.reuse, P2 ;
                           IMAD.IADD R5, R5, 0x1, R4 ;
                           ISETP.EQ.AND P4, PT, R2, 0x2, P1 ;
                           ISETP.EQ.AND P2, PT, R4, R2.reuse, P2 ;
                      @!P5 FSEL R0, R3, R7, P4 ;
                           ISETP.EQ.AND P4, PT, R21, R2, P0 ;
                           IADD3 R3, R4, 0x2, RZ ;
                           ISETP.EQ.AND P5, PT, R5, R2, P1 ;
                           IADD3 R21, R21, R4, RZ ;
                      @!P3 FSEL R14, R13, R0, P2 ;
                           ISETP.EQ.AND P2, PT, R3.reuse, R2.reuse, P1 ;
                           IMAD.IADD R3, R3, 0x1, R4 ;
                           ISETP.EQ.AND P3, PT, R21, R2, P0 ;
                           IADD3 R5, R5, R4, RZ ;
                      @!P4 FSEL R19, R28, R14, P2 ;
                           ISETP.EQ.AND P4, PT, R17, R2.reuse, P1 ;
                           ISETP.EQ.AND P2, PT, R5, R2, P0 ;
                           IMAD R5, R4, R4, RZ ;
                      @!P5 FSEL R16, R12, R19, P4 ;
                           ISETP.EQ.AND P1, PT, R3, R2, P1 ;
                           IADD3 R21, R21, R4, RZ ;
                      @!P3 FSEL R26, R18, R16, P1 ;
                           ISETP.GT.U32.AND P3, PT, R5, R2.reuse, PT ;
                           ISETP.EQ.AND P4, PT, R21, R2.reuse, P0 ;
                           ISETP.EQ.AND P5, PT, R15, R2, P0 ;
                           IADD3 R3, R3, R4, RZ ;
                      @!P2 FSEL R11, R10, R26, P5 ;
                           ISETP.EQ.AND P0, PT, R3, R2, P0 ;
                           ISETP.NE.OR P1, PT, R2, RZ, !P6 ;
                      @!P4 FSEL R9, R8, R11, P0 ;
                      @!P3 BRA  ;
                           S2UR UR6, SR_CTAID.Y ;
                           ULDC.64 UR12, c[0x0][0x270] ;
                           IMAD R3, R4, UR6, RZ ;
                           IMAD R3, R3, R4, RZ ;
                           IADD3 R0, P0, R2, R3, RZ ;
                           LEA.HI.X.SX32 R3, R3, RZ, 0x1, P0 ;
                           LEA R2, P0, R0, UR12, 0x2 ;
                           LEA.HI.X R3, R0, UR13, R3, 0x2, P0 ;
                           STG.E desc[UR8][R2.64], R9 ;
:
                           BSYNC B0 ;
:
                       @P1 EXIT ;
                           CS2R R2, SR_GLOBALTIMERLO ;
                           MOV R4, UR4 ;
                           IMAD.U32 R5, RZ, RZ, UR5 ;
                           STG.E.64 desc[UR8][R4.64+0x8], R2 ;
:
                           EXIT ;
:
                           HFMA2.MMA R22, -RZ, RZ, 0, 9.5367431640625e-07 ;
                           BSSY B0,  ;
                           MOV R21, 0x1f ;
                           MOV R20, 0xffffffff ;
                           WARPSYNC.COLLECTIVE R20,  ;
:
                           SHFL.BFLY P3, R24, R23, R22, R21 ;
                           ENDCOLLECTIVE ;
:
                           BSYNC B0 ;
:
                           HFMA2.MMA R21, -RZ, RZ, 0, 1.847743988037109375e-06 ;
                           FADD R23, R24, R23 ;
                           IMAD.MOV.U32 R22, RZ, RZ, 0x8 ;
                           MOV R20, 0xffffffff ;
                           WARPSYNC.COLLECTIVE R20,  ;
:
                           SHFL.BFLY P3, R24, R23, R22, R21 ;
                           ENDCOLLECTIVE ;
:
                           IMAD.MOV.U32 R22, RZ, RZ, 0x4 ;
                           FADD R10, R23, R24 ;
                           MOV R23, R10 ;
                           WARPSYNC.COLLECTIVE R20,  ;
:
                           SHFL.BFLY P3, R24, R23, R22, R21 ;
                           ENDCOLLECTIVE ;
:
                           HFMA2.MMA R22, -RZ, RZ, 0, 1.1920928955078125e-07 ;
                           FADD R12, R10, R24 ;
                           MOV R23, R12 ;
                           WARPSYNC.COLLECTIVE R20,  ;
:
                           SHFL.BFLY P3, R24, R23, R22, R21 ;
                           ENDCOLLECTIVE ;
:
                           IMAD.MOV.U32 R22, RZ, RZ, 0x1 ;
                           FADD R13, R12, R24 ;
                           MOV R23, R13 ;
                           WARPSYNC.COLLECTIVE R20,  ;
:
                           SHFL.BFLY P3, R24, R23, R22, R21 ;
                           ENDCOLLECTIVE ;
:
                           BRA  ;
:
                           HFMA2.MMA R22, -RZ, RZ, 0, 9.5367431640625e-07 ;
                           MOV R23, R7 ;
                           IMAD.MOV.U32 R20, RZ, RZ, -0x1 ;
                           MOV R21, 0x1f ;
                           WARPSYNC.COLLECTIVE R20,  ;
:
                           SHFL.BFLY P3, R24, R23, R22, R21 ;
                           ENDCOLLECTIVE ;
:
                           MOV R23, R6 ;
                           MOV R9, R24 ;
                           WARPSYNC.COLLECTIVE R20,  ;
:
                           SHFL.BFLY P3, R24, R23, R22, R21 ;
                           ENDCOLLECTIVE ;
:
                           MOV R22, 0x8 ;
                           MOV R8, R24 ;
                           DADD R8, R8, R6 ;
                           IMAD.MOV.U32 R23, RZ, RZ, R9 ;
                           WARPSYNC.COLLECTIVE R20,  ;
:
                           SHFL.BFLY P3, R24, R23, R22, R21 ;
                           ENDCOLLECTIVE ;
:
                           MOV R23, R8 ;
                           MOV R11, R24 ;
                           WARPSYNC.COLLECTIVE R20,  ;
:
                           SHFL.BFLY P3, R24, R23, R22, R21 ;
                           ENDCOLLECTIVE ;
:
                           HFMA2.MMA R22, -RZ, RZ, 0, 2.384185791015625e-07 ;
                           IMAD.MOV.U32 R10, RZ, RZ, R24 ;
                           DADD R10, R8, R10 ;
                           MOV R23, R11 ;
                           WARPSYNC.COLLECTIVE R20,  ;
:
                           SHFL.BFLY P3, R24, R23, R22, R21 ;
                           ENDCOLLECTIVE ;
:
                           IMAD.MOV.U32 R23, RZ, RZ, R10 ;
                           MOV R13, R24 ;
                           WARPSYNC.COLLECTIVE R20,  ;
:
                           SHFL.BFLY P3, R24, R23, R22, R21 ;
                           ENDCOLLECTIVE ;
:
                           HFMA2.MMA R22, -RZ, RZ, 0, 1.1920928955078125e-07 ;
                           MOV R12, R24 ;
                           DADD R12, R10, R12 ;
                           MOV R23, R13 ;
                           WARPSYNC.COLLECTIVE R20,  ;
:
                           SHFL.BFLY P3, R24, R23, R22, R21 ;
                           ENDCOLLECTIVE ;
:
                           MOV R23, R12 ;
                           IMAD.MOV.U32 R7, RZ, RZ, R24 ;
                           WARPSYNC.COLLECTIVE R20,  ;
:
                           SHFL.BFLY P3, R24, R23, R22, R21 ;
                           ENDCOLLECTIVE ;
:
                           IMAD.MOV.U32 R22, RZ, RZ, 0x1 ;
                           MOV R6, R24 ;
                           DADD R6, R12, R6 ;
                           MOV R23, R7 ;
                           WARPSYNC.COLLECTIVE R20,  ;
:
                           SHFL.BFLY P3, R24, R23, R22, R21 ;
                           ENDCOLLECTIVE ;
:
                           MOV R23, R6 ;
                           MOV R9, R24 ;
                           WARPSYNC.COLLECTIVE R20,  ;
:
                           SHFL.BFLY P3, R24, R23, R22, R21 ;
                           ENDCOLLECTIVE ;
:
                           MOV R8, R24 ;
                           BRA  ;
:
                           HFMA2.MMA R22, -RZ, RZ, 0, 9.5367431640625e-07 ;
                           BSSY B0,  ;
                           IMAD.MOV.U32 R23, RZ, RZ, R5 ;
                           MOV R21, 0x1f ;
                           MOV R20, 0xffffffff ;
                           WARPSYNC.COLLECTIVE R20,  ;
:
                           SHFL.BFLY P3, R24, R23, R22, R21 ;
                           ENDCOLLECTIVE ;
:
                           BSYNC B0 ;
:
                           HFMA2.MMA R22, -RZ, RZ, 0, 9.5367431640625e-07 ;
                           MOV R23, R4 ;
                           IMAD.MOV.U32 R20, RZ, RZ, -0x1 ;
                           MOV R21, 0x1f ;
                           IMAD.MOV.U32 R37, RZ, RZ, R24 ;
                           WARPSYNC.COLLECTIVE R20,  ;
:
                           SHFL.BFLY P3, R24, R23, R22, R21 ;
                           ENDCOLLECTIVE ;
:
                           HFMA2.MMA R22, -RZ, RZ, 0, 4.76837158203125e-07 ;
                           MOV R36, R24 ;
                           DADD R36, R36, R4 ;
                           MOV R23, R37 ;
                           WARPSYNC.COLLECTIVE R20,  ;
:
                           SHFL.BFLY P3, R24, R23, R22, R21 ;
                           ENDCOLLECTIVE ;
:
                           MOV R23, R36 ;
                           IMAD.MOV.U32 R39, RZ, RZ, R24 ;
                           WARPSYNC.COLLECTIVE R20,  ;
:
                           SHFL.BFLY P3, R24, R23, R22, R21 ;
                           ENDCOLLECTIVE ;
:
                           IMAD.MOV.U32 R22, RZ, RZ, 0x4 ;
                           MOV R38, R24 ;
                           DADD R38, R36, R38 ;
                           MOV R23, R39 ;
                           WARPSYNC.COLLECTIVE R20,  ;
:
                           SHFL.BFLY P3, R24, R23, R22, R21 ;
                           ENDCOLLECTIVE ;
:
                           MOV R23, R38 ;
                           MOV R41, R24 ;
                           WARPSYNC.COLLECTIVE R20,  ;
:
                           SHFL.BFLY P3, R24, R23, R22, R21 ;
                           ENDCOLLECTIVE ;
:
                           MOV R22, 0x2 ;
                           MOV R40, R24 ;
                           DADD R40, R38, R40 ;
                           IMAD.MOV.U32 R23, RZ, RZ, R41 ;
                           WARPSYNC.COLLECTIVE R20,  ;
:
                           SHFL.BFLY P3, R24, R23, R22, R21 ;
                           ENDCOLLECTIVE ;
:
                           MOV R23, R40 ;
                           MOV R5, R24 ;
                           WARPSYNC.COLLECTIVE R20,  ;
:
                           SHFL.BFLY P3, R24, R23, R22, R21 ;
                           ENDCOLLECTIVE ;
:
                           HFMA2.MMA R22, -RZ, RZ, 0, 5.9604644775390625e-08 ;
                           IMAD.MOV.U32 R4, RZ, RZ, R24 ;
                           DADD R4, R40, R4 ;
                           MOV R23, R5 ;
                           WARPSYNC.COLLECTIVE R20,  ;
:
                           SHFL.BFLY P3, R24, R23, R22, R21 ;
                           ENDCOLLECTIVE ;
:
                           IMAD.MOV.U32 R23, RZ, RZ, R4 ;
                           MOV R25, R24 ;
                           WARPSYNC.COLLECTIVE R20,  ;
:
                           SHFL.BFLY P3, R24, R23, R22, R21 ;
                           ENDCOLLECTIVE ;
:
                           BRA  ;
:
                           HFMA2.MMA R22, -RZ, RZ, 0, 9.5367431640625e-07 ;
                           BSSY B0,  ;
                           MOV R23, R34 ;
                           IMAD.MOV.U32 R20, RZ, RZ, -0x1 ;
                           MOV R21, 0x1f ;
                           WARPSYNC.COLLECTIVE R20,  ;
:
                           SHFL.BFLY P3, R24, R23, R22, R21 ;
                           ENDCOLLECTIVE ;
:
                           BSYNC B0 ;
:
                           HFMA2.MMA R22, -RZ, RZ, 0, 4.76837158203125e-07 ;
                           FADD R23, R24, R34 ;
                           MOV R21, 0x1f ;
                           MOV R20, 0xffffffff ;
                           WARPSYNC.COLLECTIVE R20,  ;
:
                           SHFL.BFLY P3, R24, R23, R22, R21 ;
                           ENDCOLLECTIVE ;
:
                           HFMA2.MMA R22, -RZ, RZ, 0, 2.384185791015625e-07 ;
                           FADD R4, R23, R24 ;
                           IMAD.MOV.U32 R23, RZ, RZ, R4 ;
                           WARPSYNC.COLLECTIVE R20,  ;
:
                           SHFL.BFLY P3, R24, R23, R22, R21 ;
                           ENDCOLLECTIVE ;
:
                           HFMA2.MMA R22, -RZ, RZ, 0, 1.1920928955078125e-07 ;
                           FADD R5, R4, R24 ;
                           MOV R23, R5 ;
                           WARPSYNC.COLLECTIVE R20,  ;
:
                           SHFL.BFLY P3, R24, R23, R22, R21 ;
                           ENDCOLLECTIVE ;
:
                           MOV R22, 0x1 ;
                           FADD R25, R5, R24 ;
                           IMAD.MOV.U32 R23, RZ, RZ, R25 ;
                           WARPSYNC.COLLECTIVE R20,  ;
:
                           SHFL.BFLY P3, R24, R23, R22, R21 ;
                           ENDCOLLECTIVE ;
:
                           BRA  ;
:
                           HFMA2.MMA R22, -RZ, RZ, 0, 9.5367431640625e-07 ;
                           MOV R23, R5 ;
                           IMAD.MOV.U32 R21, RZ, RZ, 0x1f ;
                           MOV R20, 0xffffffff ;
                           WARPSYNC.COLLECTIVE R20,  ;
:
                           SHFL.BFLY P3, R24, R23, R22, R21 ;
                           ENDCOLLECTIVE ;
:
                           MOV R23, R4 ;
                           MOV R13, R24 ;
                           WARPSYNC.COLLECTIVE R20,  ;
:
                           SHFL.BFLY P3, R24, R23, R22, R21 ;
                           ENDCOLLECTIVE ;
:
                           HFMA2.MMA R22, -RZ, RZ, 0, 4.76837158203125e-07 ;
                           IMAD.MOV.U32 R12, RZ, RZ, R24 ;
                           DADD R12, R12, R4 ;
                           MOV R23, R13 ;
                           WARPSYNC.COLLECTIVE R20,  ;
:
                           SHFL.BFLY P3, R24, R23, R22, R21 ;
                           ENDCOLLECTIVE ;
:
                           IMAD.MOV.U32 R23, RZ, RZ, R12 ;
                           MOV R15, R24 ;
                           WARPSYNC.COLLECTIVE R20,  ;
:
                           SHFL.BFLY P3, R24, R23, R22, R21 ;
                           ENDCOLLECTIVE ;
:
                           HFMA2.MMA R22, -RZ, RZ, 0, 2.384185791015625e-07 ;
                           MOV R14, R24 ;
                           DADD R14, R12, R14 ;
                           MOV R23, R15 ;
                           WARPSYNC.COLLECTIVE R20,  ;
:
                           SHFL.BFLY P3, R24, R23, R22, R21 ;
                           ENDCOLLECTIVE ;
:
                           MOV R23, R14 ;
                           IMAD.MOV.U32 R17, RZ, RZ, R24 ;
                           WARPSYNC.COLLECTIVE R20,  ;
:
                           SHFL.BFLY P3, R24, R23, R22, R21 ;
                           ENDCOLLECTIVE ;
:
                           IMAD.MOV.U32 R22, RZ, RZ, 0x2 ;
                           MOV R16, R24 ;
                           DADD R16, R14, R16 ;
                           MOV R23, R17 ;
                           WARPSYNC.COLLECTIVE R20,  ;
:
                           SHFL.BFLY P3, R24, R23, R22, R21 ;
                           ENDCOLLECTIVE ;
:
                           MOV R23, R16 ;
                           MOV R5, R24 ;
                           WARPSYNC.COLLECTIVE R20,  ;
:
                           SHFL.BFLY P3, R24, R23, R22, R21 ;
                           ENDCOLLECTIVE ;
:
                           MOV R22, 0x1 ;
                           MOV R4, R24 ;
                           DADD R4, R16, R4 ;
                           IMAD.MOV.U32 R23, RZ, RZ, R5 ;
                           WARPSYNC.COLLECTIVE R20,  ;
:
                           SHFL.BFLY P3, R24, R23, R22, R21 ;
                           ENDCOLLECTIVE ;
:
                           MOV R23, R4 ;
                           MOV R13, R24 ;
                           WARPSYNC.COLLECTIVE R20,  ;
:
                           SHFL.BFLY P3, R24, R23, R22, R21 ;
                           ENDCOLLECTIVE ;
:
                           IMAD.MOV.U32 R12, RZ, RZ, R24 ;
                           BRA  ;
:
                           HFMA2.MMA R22, -RZ, RZ, 0, 9.5367431640625e-07 ;
                           BSSY B0,  ;
                           MOV R21, 0x1f ;
                           MOV R20, 0xffffffff ;
                           WARPSYNC.COLLECTIVE R20,  ;
:
                           SHFL.BFLY P3, R24, R23, R22, R21 ;
                           ENDCOLLECTIVE ;
:
                           BSYNC B0 ;
:
                           HFMA2.MMA R22, -RZ, RZ, 0, 9.5367431640625e-07 ;
                           FADD R23, |R16|, -RZ ;
                           MOV R21, 0x1f ;
                           IMAD.MOV.U32 R0, RZ, RZ, R24 ;
                           MOV R20, 0xffffffff ;
                           FMNMX R0, |R17|, R0, !PT ;
                           WARPSYNC.COLLECTIVE R20,  ;
:
                           SHFL.BFLY P3, R24, R23, R22, R21 ;
                           ENDCOLLECTIVE ;
:
                           HFMA2.MMA R22, -RZ, RZ, 0, 4.76837158203125e-07 ;
                           MOV R23, R0 ;
                           IMAD.MOV.U32 R3, RZ, RZ, R24 ;
                           WARPSYNC.COLLECTIVE R20,  ;
:
                           SHFL.BFLY P3, R24, R23, R22, R21 ;
                           ENDCOLLECTIVE ;
:
                           FMNMX R3, |R16|, R3, !PT ;
                           IMAD.MOV.U32 R23, RZ, RZ, R3 ;
                           MOV R5, R24 ;
                           WARPSYNC.COLLECTIVE R20,  ;
:
                           SHFL.BFLY P3, R24, R23, R22, R21 ;
                           ENDCOLLECTIVE ;
:
                           FMNMX R5, R0, R5, !PT ;
                           HFMA2.MMA R22, -RZ, RZ, 0, 2.384185791015625e-07 ;
                           MOV R23, R5 ;
                           MOV R4, R24 ;
                           WARPSYNC.COLLECTIVE R20,  ;
:
                           SHFL.BFLY P3, R24, R23, R22, R21 ;
                           ENDCOLLECTIVE ;
:
                           FMNMX R4, R3, R4, !PT ;
                           MOV R23, R4 ;
                           IMAD.MOV.U32 R18, RZ, RZ, R24 ;
                           WARPSYNC.COLLECTIVE R20,  ;
:
                           SHFL.BFLY P3, R24, R23, R22, R21 ;
                           ENDCOLLECTIVE ;
:
                           FMNMX R18, R5, R18, !PT ;
                           MOV R23, R18 ;
                           IMAD.MOV.U32 R22, RZ, RZ, 0x2 ;
                           MOV R19, R24 ;
                           WARPSYNC.COLLECTIVE R20,  ;
:
                           SHFL.BFLY P3, R24, R23, R22, R21 ;
                           ENDCOLLECTIVE ;
:
                           FMNMX R19, R4, R19, !PT ;
                           MOV R23, R19 ;
                           MOV R25, R24 ;
                           WARPSYNC.COLLECTIVE R20,  ;
:
                           SHFL.BFLY P3, R24, R23, R22, R21 ;
                           ENDCOLLECTIVE ;
:
                           FMNMX R25, R18, R25, !PT ;
                           HFMA2.MMA R22, -RZ, RZ, 0, 5.9604644775390625e-08 ;
                           IMAD.MOV.U32 R23, RZ, RZ, R25 ;
                           MOV R26, R24 ;
                           WARPSYNC.COLLECTIVE R20,  ;
:
                           SHFL.BFLY P3, R24, R23, R22, R21 ;
                           ENDCOLLECTIVE ;
:
                           FMNMX R26, R19, R26, !PT ;
                           MOV R23, R26 ;
                           MOV R0, R24 ;
                           WARPSYNC.COLLECTIVE R20,  ;
:
                           SHFL.BFLY P3, R24, R23, R22, R21 ;
                           ENDCOLLECTIVE ;
:
                           FMNMX R3, R25, R0, !PT ;
                           BRA  ;
:
                           HFMA2.MMA R22, -RZ, RZ, 0, 9.5367431640625e-07 ;
                           BSSY B0,  ;
                           IMAD.MOV.U32 R23, RZ, RZ, R19 ;
                           MOV R21, 0x1f ;
                           MOV R20, 0xffffffff ;
                           WARPSYNC.COLLECTIVE R20,  ;
:
                           SHFL.BFLY P3, R24, R23, R22, R21 ;
                           ENDCOLLECTIVE ;
:
                           BSYNC B0 ;
:
                           HFMA2.MMA R22, -RZ, RZ, 0, 9.5367431640625e-07 ;
                           MOV R23, R16 ;
                           IMAD.MOV.U32 R20, RZ, RZ, -0x1 ;
                           MOV R21, 0x1f ;
                           IMAD.MOV.U32 R4, RZ, RZ, R24 ;
                           WARPSYNC.COLLECTIVE R20,  ;
:
                           SHFL.BFLY P3, R24, R23, R22, R21 ;
                           ENDCOLLECTIVE ;
:
                           IADD3 R4, R19, R4, RZ ;
                           MOV R23, R4 ;
                           IMAD.MOV.U32 R22, RZ, RZ, 0x8 ;
                           MOV R5, R24 ;
                           WARPSYNC.COLLECTIVE R20,  ;
:
                           SHFL.BFLY P3, R24, R23, R22, R21 ;
                           ENDCOLLECTIVE ;
:
                           IADD3 R5, R16, R5, RZ ;
                           MOV R23, R5 ;
                           MOV R17, R24 ;
                           WARPSYNC.COLLECTIVE R20,  ;
:
                           SHFL.BFLY P3, R24, R23, R22, R21 ;
                           ENDCOLLECTIVE ;
:
                           IADD3 R17, R4, R17, RZ ;
                           HFMA2.MMA R22, -RZ, RZ, 0, 2.384185791015625e-07 ;
                           MOV R23, R17 ;
                           IMAD.MOV.U32 R18, RZ, RZ, R24 ;
                           WARPSYNC.COLLECTIVE R20,  ;
:
                           SHFL.BFLY P3, R24, R23, R22, R21 ;
                           ENDCOLLECTIVE ;
:
                           IADD3 R18, R5, R18, RZ ;
                           MOV R23, R18 ;
                           IMAD.MOV.U32 R26, RZ, RZ, R24 ;
                           WARPSYNC.COLLECTIVE R20,  ;
:
                           SHFL.BFLY P3, R24, R23, R22, R21 ;
                           ENDCOLLECTIVE ;
:
                           IMAD.IADD R26, R17, 0x1, R26 ;
                           HFMA2.MMA R22, -RZ, RZ, 0, 1.1920928955078125e-07 ;
                           MOV R23, R26 ;
                           MOV R25, R24 ;
                           WARPSYNC.COLLECTIVE R20,  ;
:
                           SHFL.BFLY P3, R24, R23, R22, R21 ;
                           ENDCOLLECTIVE ;
:
                           IMAD.IADD R25, R18, 0x1, R25 ;
                           MOV R23, R25 ;
                           MOV R27, R24 ;
                           WARPSYNC.COLLECTIVE R20,  ;
:
                           SHFL.BFLY P3, R24, R23, R22, R21 ;
                           ENDCOLLECTIVE ;
:
                           IADD3 R27, R26, R27, RZ ;
                           HFMA2.MMA R22, -RZ, RZ, 0, 5.9604644775390625e-08 ;
                           IMAD.MOV.U32 R23, RZ, RZ, R27 ;
                           MOV R28, R24 ;
                           WARPSYNC.COLLECTIVE R20,  ;
:
                           SHFL.BFLY P3, R24, R23, R22, R21 ;
                           ENDCOLLECTIVE ;
:
                           IADD3 R28, R25, R28, RZ ;
                           IMAD.MOV.U32 R23, RZ, RZ, R28 ;
                           MOV R4, R24 ;
                           WARPSYNC.COLLECTIVE R20,  ;
:
                           SHFL.BFLY P3, R24, R23, R22, R21 ;
                           ENDCOLLECTIVE ;
:
                           IADD3 R29, R27, R4, RZ ;
                           BRA  ;
        .weak           $__internal_42_$__cuda_sm20_div_rn_f64_full
        .type           $__internal_42_$__cuda_sm20_div_rn_f64_full,@function
        .size           $__internal_42_$__cuda_sm20_div_rn_f64_full,($__internal_43_$__cuda_sm20_rcp_rn_f32_slowpath - $__internal_42_$__cuda_sm20_div_rn_f64_full)
$__internal_42_$__cuda_sm20_div_rn_f64_full:
                           FSETP.GEU.AND P3, PT, |R21|.reuse, 1.469367938527859385e-39, PT ;
                           IMAD.MOV.U32 R43, RZ, RZ, 0x1ca00000 ;
                           LOP3.LUT R4, R21, 0x800fffff, RZ, 0xc0, !PT ;
                           BSSY B3,  ;
                           FSETP.GEU.AND P4, PT, |R23|, 1.469367938527859385e-39, PT ;
                           LOP3.LUT R5, R4, 0x3ff00000, RZ, 0xfc, !PT ;
                           MOV R4, R20 ;
                           MOV R36, 0x1 ;
                           LOP3.LUT R42, R23, 0x7ff00000, RZ, 0xc0, !PT ;
                      @!P3 DMUL R4, R20, 8.98846567431157953865e+307 ;
                           LOP3.LUT R45, R21.reuse, 0x7ff00000, RZ, 0xc0, !PT ;
                           MOV R44, R42 ;
                      @!P4 LOP3.LUT R39, R21, 0x7ff00000, RZ, 0xc0, !PT ;
                           MUFU.RCP64H R37, R5 ;
                           ISETP.GE.U32.AND P6, PT, R42.reuse, R45, PT ;
                      @!P4 ISETP.GE.U32.AND P5, PT, R42, R39, PT ;
                      @!P3 LOP3.LUT R45, R5, 0x7ff00000, RZ, 0xc0, !PT ;
                      @!P4 SEL R39, R43, 0x63400000, !P5 ;
                           IADD3 R47, R45, -0x1, RZ ;
                      @!P4 LOP3.LUT R40, R39, 0x80000000, R23, 0xf8, !PT ;
                      @!P4 LOP3.LUT R41, R40, 0x100000, RZ, 0xfc, !PT ;
                           DFMA R24, R36, -R4, 1 ;
                      @!P4 MOV R40, RZ ;
                           DFMA R24, R24, R24, R24 ;
                           DFMA R36, R36, R24, R36 ;
                           SEL R25, R43, 0x63400000, !P6 ;
                           MOV R24, R22 ;
                           LOP3.LUT R25, R25, 0x800fffff, R23, 0xf8, !PT ;
                           DFMA R38, R36, -R4, 1 ;
                      @!P4 DFMA R24, R24, 2, -R40 ;
                           DFMA R36, R36, R38, R36 ;
                      @!P4 LOP3.LUT R44, R25, 0x7ff00000, RZ, 0xc0, !PT ;
                           DMUL R38, R36, R24 ;
                           VIADD R46, R44, 0xffffffff ;
                           ISETP.GT.U32.AND P3, PT, R46, 0x7feffffe, PT ;
                           DFMA R40, R38, -R4, R24 ;
                           ISETP.GT.U32.OR P3, PT, R47, 0x7feffffe, P3 ;
                           DFMA R36, R36, R40, R38 ;
                       @P3 BRA  ;
                           LOP3.LUT R23, R21, 0x7ff00000, RZ, 0xc0, !PT ;
                           VIADDMNMX R22, R42.reuse, -R23.reuse, 0xb9600000, !PT ;
                           ISETP.GE.U32.AND P3, PT, R42, R23, PT ;
                           VIMNMX R22, R22, 0x46a00000, PT ;
                           SEL R43, R43, 0x63400000, !P3 ;
                           IADD3 R40, -R43, R22, RZ ;
                           IMAD.MOV.U32 R22, RZ, RZ, RZ ;
                           IADD3 R23, R40, 0x7fe00000, RZ ;
                           DMUL R38, R36, R22 ;
                           FSETP.GTU.AND P3, PT, |R39|, 1.469367938527859385e-39, PT ;
                       @P3 BRA  ;
                           DFMA R4, R36, -R4, R24 ;
                           MOV R22, RZ ;
                           FSETP.NEU.AND P3, PT, R5.reuse, RZ, PT ;
                           LOP3.LUT R21, R5, 0x80000000, R21, 0x48, !PT ;
                           LOP3.LUT R23, R21, R23, RZ, 0xfc, !PT ;
                      @!P3 BRA  ;
                           IADD3 R5, -R40, RZ, RZ ;
                           DMUL.RP R22, R36, R22 ;
                           MOV R4, RZ ;
                           DFMA R4, R38, -R4, R36 ;
                           LOP3.LUT R21, R23, R21, RZ, 0x3c, !PT ;
                           IADD3 R4, -R40, -0x43300000, RZ ;
                           FSETP.NEU.AND P3, PT, |R5|, R4, PT ;
                           FSEL R38, R22, R38, !P3 ;
                           FSEL R39, R21, R39, !P3 ;
                           BRA  ;
:
                           DSETP.NAN.AND P3, PT, R22, R22, PT ;
                       @P3 BRA  ;
                           DSETP.NAN.AND P3, PT, R20, R20, PT ;
                       @P3 BRA  ;
                           ISETP.NE.AND P3, PT, R44, R45, PT ;
                           IMAD.MOV.U32 R38, RZ, RZ, 0x0 ;
                           MOV R39, 0xfff80000 ;
                      @!P3 BRA  ;
                           ISETP.NE.AND P3, PT, R44, 0x7ff00000, PT ;
                           LOP3.LUT R39, R23, 0x80000000, R21, 0x48, !PT ;
                           ISETP.EQ.OR P3, PT, R45, RZ, !P3 ;
                       @P3 LOP3.LUT R4, R39, 0x7ff00000, RZ, 0xfc, !PT ;
                      @!P3 MOV R38, RZ ;
                       @P3 MOV R38, RZ ;
                       @P3 IMAD.MOV.U32 R39, RZ, RZ, R4 ;
                           BRA  ;
:
                           LOP3.LUT R39, R21, 0x80000, RZ, 0xfc, !PT ;
                           MOV R38, R20 ;
                           BRA  ;
:
                           LOP3.LUT R39, R23, 0x80000, RZ, 0xfc, !PT ;
                           MOV R38, R22 ;
:
                           BSYNC B3 ;
:
                           MOV R4, R34 ;
                           IMAD.MOV.U32 R5, RZ, RZ, 0x0 ;
                           RET.REL.NODEC R4  ;
        .weak           $__internal_43_$__cuda_sm20_rcp_rn_f32_slowpath
        .type           $__internal_43_$__cuda_sm20_rcp_rn_f32_slowpath,@function
        .size           $__internal_43_$__cuda_sm20_rcp_rn_f32_slowpath,($__internal_44_$__cuda_sm20_sqrt_rn_f32_slowpath - $__internal_43_$__cuda_sm20_rcp_rn_f32_slowpath)
$__internal_43_$__cuda_sm20_rcp_rn_f32_slowpath:
                           SHF.L.U32 R5, R4, 0x1, RZ ;
                           BSSY B0,  ;
                           SHF.R.U32.HI R5, RZ, 0x18, R5 ;
                           ISETP.NE.U32.AND P3, PT, R5, RZ, PT ;
                       @P3 BRA  ;
                           SHF.L.U32 R5, R4, 0x1, RZ ;
                           ISETP.NE.AND P3, PT, R5, RZ, PT ;
                       @P3 FFMA R22, R4, 1.84467440737095516160e+19, RZ ;
                      @!P3 MUFU.RCP R21, R4 ;
                       @P3 MUFU.RCP R5, R22 ;
                       @P3 FFMA R23, R22, R5, -1 ;
                       @P3 FADD.FTZ R24, -R23, -RZ ;
                       @P3 FFMA R5, R5, R24, R5 ;
                       @P3 FFMA R21, R5, 1.84467440737095516160e+19, RZ ;
                           BRA  ;
:
                           IADD3 R21, R5, -0xfd, RZ ;
                           ISETP.GT.U32.AND P3, PT, R21, 0x1, PT ;
                       @P3 BRA  ;
                           LOP3.LUT R36, R4, 0x7fffff, RZ, 0xc0, !PT ;
                           IMAD.MOV.U32 R24, RZ, RZ, 0x3 ;
                           IADD3 R5, R5, -0xfc, RZ ;
                           LOP3.LUT R36, R36, 0x3f800000, RZ, 0xfc, !PT ;
                           MUFU.RCP R23, R36 ;
                           FFMA R34, R36, R23, -1 ;
                           FADD.FTZ R34, -R34, -RZ ;
                           FFMA.RM R22, R23.reuse, R34.reuse, R23.reuse ;
                           FFMA.RP R25, R23, R34, R23 ;
                           SHF.L.U32 R23, R24, R21, RZ ;
                           LOP3.LUT R34, R22.reuse, 0x7fffff, RZ, 0xc0, !PT ;
                           FSETP.NEU.FTZ.AND P3, PT, R22, R25, PT ;
                           LOP3.LUT R22, R34, 0x800000, RZ, 0xfc, !PT ;
                           SEL R24, RZ, 0xffffffff, !P3 ;
                           LOP3.LUT R34, R23, R22, RZ, 0xc0, !PT ;
                           IADD3 R24, -R24, RZ, RZ ;
                           SHF.R.U32.HI R34, RZ, R21.reuse, R34 ;
                           LOP3.LUT P3, RZ, R24, R21, R22.reuse, 0xf8, !PT ;
                           LOP3.LUT P4, RZ, R34.reuse, 0x1, RZ, 0xc0, !PT ;
                           LOP3.LUT P5, RZ, R34, 0x2, RZ, 0xc0, !PT ;
                           SHF.R.U32.HI R5, RZ, R5, R22 ;
                           PLOP3.LUT P3, PT, P4, P3, P5, 0xe0, 0x0 ;
                           LOP3.LUT P4, RZ, R4, 0x7fffff, RZ, 0xc0, !PT ;
                           SEL R21, RZ, 0x1, !P3 ;
                           IADD3 R21, -R21, RZ, RZ ;
                           ISETP.GE.AND P3, PT, R21, RZ, PT ;
                      @!P3 VIADD R5, R5, 0x1 ;
                      @!P4 SHF.L.U32 R5, R5, 0x1, RZ ;
                           LOP3.LUT R21, R5, 0x80000000, R4, 0xf8, !PT ;
                           BRA  ;
:
                           MUFU.RCP R21, R4 ;
:
                           BSYNC B0 ;
:
                           MOV R4, R21 ;
                           HFMA2.MMA R21, -RZ, RZ, 0, 0 ;
                           RET.REL.NODEC R20  ;
        .weak           $__internal_44_$__cuda_sm20_sqrt_rn_f32_slowpath
        .type           $__internal_44_$__cuda_sm20_sqrt_rn_f32_slowpath,@function
        .size           $__internal_44_$__cuda_sm20_sqrt_rn_f32_slowpath,($__internal_45_$__cuda_sm3x_div_rn_noftz_f32_slowpath - $__internal_44_$__cuda_sm20_sqrt_rn_f32_slowpath)
$__internal_44_$__cuda_sm20_sqrt_rn_f32_slowpath:
                           LOP3.LUT P3, RZ, R4, 0x7fffffff, RZ, 0xc0, !PT ;
                      @!P3 IMAD.MOV.U32 R5, RZ, RZ, R4 ;
                      @!P3 BRA  ;
                           FSETP.GEU.FTZ.AND P3, PT, R4, RZ, PT ;
                      @!P3 MOV R5, 0x7fffffff ;
                      @!P3 BRA  ;
                           FSETP.GTU.FTZ.AND P3, PT, |R4|, +INF , PT ;
                       @P3 FADD.FTZ R5, R4, 1 ;
                       @P3 BRA  ;
                           FSETP.NEU.FTZ.AND P3, PT, |R4|, +INF , PT ;
                       @P3 FFMA R20, R4, 1.84467440737095516160e+19, RZ ;
                       @P3 MUFU.RSQ R5, R20 ;
                       @P3 FMUL.FTZ R21, R20, R5 ;
                       @P3 FMUL.FTZ R23, R5, 0.5 ;
                      @!P3 MOV R5, R4 ;
                       @P3 FADD.FTZ R22, -R21, -RZ ;
                       @P3 FFMA R22, R21, R22, R20 ;
                       @P3 FFMA R22, R22, R23, R21 ;
                       @P3 FMUL.FTZ R5, R22, 2.3283064365386962891e-10 ;
:
                           MOV R20, R5 ;
                           HFMA2.MMA R5, -RZ, RZ, 0, 0 ;
                           IMAD.MOV.U32 R4, RZ, RZ, R24 ;
                           RET.REL.NODEC R4  ;
        .weak           $__internal_45_$__cuda_sm3x_div_rn_noftz_f32_slowpath
        .type           $__internal_45_$__cuda_sm3x_div_rn_noftz_f32_slowpath,@function
        .size           $__internal_45_$__cuda_sm3x_div_rn_noftz_f32_slowpath,( - $__internal_45_$__cuda_sm3x_div_rn_noftz_f32_slowpath)
$__internal_45_$__cuda_sm3x_div_rn_noftz_f32_slowpath:
                           SHF.R.U32.HI R22, RZ, 0x17, R5 ;
                           BSSY B0,  ;
                           SHF.R.U32.HI R21, RZ, 0x17, R4 ;
                           LOP3.LUT R26, R22, 0xff, RZ, 0xc0, !PT ;
                           LOP3.LUT R24, R21, 0xff, RZ, 0xc0, !PT ;
                           IADD3 R23, R26, -0x1, RZ ;
                           IADD3 R22, R24, -0x1, RZ ;
                           ISETP.GT.U32.AND P3, PT, R23, 0xfd, PT ;
                           ISETP.GT.U32.OR P3, PT, R22, 0xfd, P3 ;
                      @!P3 IMAD.MOV.U32 R21, RZ, RZ, RZ ;
                      @!P3 BRA  ;
                           FSETP.GTU.FTZ.AND P3, PT, |R4|, +INF , PT ;
                           FSETP.GTU.FTZ.AND P4, PT, |R5|, +INF , PT ;
                           PLOP3.LUT P3, PT, P3, P4, PT, 0xa8, 0x0 ;
                       @P3 BRA  ;
                           LOP3.LUT P3, RZ, R5, 0x7fffffff, R4, 0xc8, !PT ;
                      @!P3 BRA  ;
                           FSETP.NEU.FTZ.AND P5, PT, |R4|.reuse, +INF , PT ;
                           FSETP.NEU.FTZ.AND P3, PT, |R5|, +INF , PT ;
                           FSETP.NEU.FTZ.AND P4, PT, |R4|, +INF , PT ;
                      @!P3 BRA !P5,  ;
                           LOP3.LUT P5, RZ, R4, 0x7fffffff, RZ, 0xc0, !PT ;
                           PLOP3.LUT P5, PT, P3, P5, PT, 0x2a, 0x0 ;
                       @P5 BRA  ;
                           LOP3.LUT P3, RZ, R5, 0x7fffffff, RZ, 0xc0, !PT ;
                           PLOP3.LUT P3, PT, P4, P3, PT, 0x2a, 0x0 ;
                       @P3 BRA  ;
                           ISETP.GE.AND P3, PT, R22, RZ, PT ;
                           ISETP.GE.AND P4, PT, R23, RZ, PT ;
                       @P3 MOV R21, RZ ;
                      @!P3 FFMA R4, R4, 1.84467440737095516160e+19, RZ ;
                      @!P3 MOV R21, 0xffffffc0 ;
                      @!P4 FFMA R5, R5, 1.84467440737095516160e+19, RZ ;
                      @!P4 IADD3 R21, R21, 0x40, RZ ;
:
                           LEA R22, R26, 0xc0800000, 0x17 ;
                           BSSY B1,  ;
                           IMAD.IADD R22, R5, 0x1, -R22 ;
                           IADD3 R5, R24, -0x7f, RZ ;
                           MUFU.RCP R23, R22 ;
                           FADD.FTZ R25, -R22, -RZ ;
                           IMAD R4, R5.reuse, -0x800000, R4 ;
                           IADD3 R22, R5, 0x7f, -R26 ;
                           IADD3 R22, R22, R21, RZ ;
                           FFMA R24, R23, R25, 1 ;
                           FFMA R28, R23, R24, R23 ;
                           FFMA R23, R4, R28, RZ ;
                           FFMA R24, R25, R23, R4 ;
                           FFMA R23, R28, R24, R23 ;
                           FFMA R24, R25, R23, R4 ;
                           FFMA R4, R28, R24, R23 ;
                           SHF.R.U32.HI R5, RZ, 0x17, R4 ;
                           LOP3.LUT R5, R5, 0xff, RZ, 0xc0, !PT ;
                           IADD3 R25, R5, R22, RZ ;
                           VIADD R5, R25, 0xffffffff ;
                           ISETP.GE.U32.AND P3, PT, R5, 0xfe, PT ;
                      @!P3 BRA  ;
                           ISETP.GT.AND P3, PT, R25, 0xfe, PT ;
                       @P3 BRA  ;
                           ISETP.GE.AND P3, PT, R25, 0x1, PT ;
                       @P3 BRA  ;
                           ISETP.GE.AND P3, PT, R25, -0x18, PT ;
                           LOP3.LUT R4, R4, 0x80000000, RZ, 0xc0, !PT ;
                      @!P3 BRA  ;
                           FFMA.RZ R5, R28.reuse, R24.reuse, R23.reuse ;
                           FFMA.RM R22, R28.reuse, R24.reuse, R23.reuse ;
                           ISETP.NE.AND P3, PT, R25.reuse, RZ, PT ;
                           ISETP.NE.AND P4, PT, R25, RZ, PT ;
                           LOP3.LUT R21, R5, 0x7fffff, RZ, 0xc0, !PT ;
                           FFMA.RP R5, R28, R24, R23 ;
                           IADD3 R24, R25, 0x20, RZ ;
                           LOP3.LUT R21, R21, 0x800000, RZ, 0xfc, !PT ;
                           IADD3 R23, -R25, RZ, RZ ;
                           SHF.L.U32 R24, R21, R24, RZ ;
                           FSETP.NEU.FTZ.AND P5, PT, R5, R22, PT ;
                           SEL R22, R23, RZ, P3 ;
                           ISETP.NE.AND P4, PT, R24, RZ, P4 ;
                           SHF.R.U32.HI R22, RZ, R22, R21 ;
                           PLOP3.LUT P4, PT, P5, P4, PT, 0xa8, 0x0 ;
                           SHF.R.U32.HI R24, RZ, 0x1, R22 ;
                           SEL R5, RZ, 0x1, !P4 ;
                           LOP3.LUT R5, R5, 0x1, R24, 0xf8, !PT ;
                           LOP3.LUT R5, R5, R22, RZ, 0xc0, !PT ;
                           IADD3 R5, R24, R5, RZ ;
                           LOP3.LUT R4, R5, R4, RZ, 0xfc, !PT ;
                           BRA  ;
:
                           LOP3.LUT R4, R4, 0x80000000, RZ, 0xc0, !PT ;
                           LOP3.LUT R4, R4, 0x7f800000, RZ, 0xfc, !PT ;
                           BRA  ;
:
                           IMAD R4, R22, 0x800000, R4 ;
:
                           BSYNC B1 ;
:
                           BRA  ;
:
                           LOP3.LUT R4, R5, 0x80000000, R4, 0x48, !PT ;
                           LOP3.LUT R4, R4, 0x7f800000, RZ, 0xfc, !PT ;
                           BRA  ;
:
                           LOP3.LUT R4, R5, 0x80000000, R4, 0x48, !PT ;
                           BRA  ;
:
                           MUFU.RSQ R4, -QNAN  ;
                           BRA  ;
:
                           FADD.FTZ R4, R4, R5 ;
:
                           BSYNC B0 ;
:
                           HFMA2.MMA R5, -RZ, RZ, 0, 0 ;
                           MOV R21, R4 ;
                           MOV R4, R18 ;
                           RET.REL.NODEC R4  ;
:
                           BRA ;
                           NOP;
                           NOP;
                           NOP;
                           NOP;
                           NOP;
                           NOP;
                           NOP;
                           NOP;
:
//--------------------- .text.hc_finish           --------------------------
	.section	.text.hc_finish,"ax",@progbits
	.align	128
        .global         hc_finish
        .type           hc_finish,@function
        .size           hc_finish,( - hc_finish)
        .other          hc_finish,@"STO_CUDA_ENTRY STV_DEFAULT"
hc_finish:
